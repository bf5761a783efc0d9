// Bindings of the occl backend: the class that drawbridge/distributed.py's creator returns to
// torch.distributed.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>

#include "distributed/process_group_occl.h"
#include "python/bindings.h"

namespace {

// The holder torch gives its own c10d classes: one intrusive_ptr, released without the GIL,
// because destroying a backend joins its threads, and those may be running a future's Python
// callback that waits for the GIL.
template <typename T>
class NoGilPtr {
 public:
  NoGilPtr() = default;
  /* implicit */ NoGilPtr(c10::intrusive_ptr<T> impl) : impl_(std::move(impl)) {}
  explicit NoGilPtr(T* raw) : impl_(c10::intrusive_ptr<T>::unsafe_steal_from_new(raw)) {}
  NoGilPtr(const NoGilPtr&) = default;
  NoGilPtr(NoGilPtr&&) noexcept = default;
  NoGilPtr& operator=(const NoGilPtr&) = default;
  NoGilPtr& operator=(NoGilPtr&&) noexcept = default;
  ~NoGilPtr() {
    if (impl_ && PyGILState_Check()) {
      pybind11::gil_scoped_release release;
      impl_.reset();
    }
  }
  T* get() const noexcept { return impl_.get(); }

 private:
  c10::intrusive_ptr<T> impl_;
};

}  // namespace

PYBIND11_DECLARE_HOLDER_TYPE(T, NoGilPtr<T>, true)

namespace drawbridge::python {

namespace py = pybind11;

void bind_distributed(py::module& m) {
  using distributed::ProcessGroupOCCL;
  // The base class is torch's c10d Backend, registered by torch._C._distributed_c10d.
  py::module::import("torch._C._distributed_c10d");
  py::class_<ProcessGroupOCCL, c10d::Backend, NoGilPtr<ProcessGroupOCCL>>(m, "ProcessGroupOCCL")
      .def(py::init([](py::object gloo, int rank, int size, std::chrono::milliseconds timeout) {
             auto* host = gloo.cast<c10d::Backend*>();
             return NoGilPtr<ProcessGroupOCCL>(c10::make_intrusive<ProcessGroupOCCL>(
                 c10::intrusive_ptr<c10d::Backend>::reclaim_copy(host), rank, size, timeout));
           }),
           py::arg("gloo"), py::arg("rank"), py::arg("size"), py::arg("timeout"));
}

}  // namespace drawbridge::python
