// drawbridge._C: bindings only. Importing it registers the ocl backend with torch (allocator,
// guard, hooks, kernels, fallback), through static initializers in the other layers.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <ATen/core/Generator.h>
#include <ATen/ops/empty.h>

#include "compiler/generated_program.h"
#include "extension/extension_api.h"
#include "extension/user_kernel.h"
#include "core/device_state.h"
#include "core/fallback.h"
#include "core/fallback_report.h"
#include "core/generator.h"
#include "core/host_allocator.h"
#include "kernels/blas.h"
#include "kernels/fft.h"
#include "kernels/packed_gemm.h"
#include "kernels/kernel_library.h"
#include "python/bindings.h"
#include "runtime/commands.h"
#include "runtime/device.h"
#include "runtime/device_list.h"
#include "runtime/kernel_times.h"
#include "runtime/program_cache.h"

namespace py = pybind11;
using namespace drawbridge;

namespace {

py::dict device_properties(c10::DeviceIndex index) {
  const auto& p = core::checked_device(index).properties();
  py::dict d;
  d["name"] = p.name;
  d["vendor"] = p.vendor;
  d["driver_version"] = p.driver_version;
  d["platform_name"] = p.platform_name;
  d["opencl_version"] = p.opencl_version;
  d["type"] = p.type;
  d["device_class"] = p.cpu_class() ? "cpu" : "gpu";
  d["total_memory"] = p.global_mem_bytes;
  d["max_alloc_size"] = p.max_alloc_bytes;
  d["local_memory"] = p.local_mem_bytes;
  d["multi_processor_count"] = p.compute_units;
  d["max_work_group_size"] = p.max_work_group_size;
  d["base_address_align"] = p.base_address_align;
  d["supports_fp16"] = p.fp16;
  d["supports_fp64"] = p.fp64;
  return d;
}

core::PhiloxGenerator& generator(c10::DeviceIndex index) {
  return *core::default_generator(index).get<core::PhiloxGenerator>();
}

py::bytes rng_state(c10::DeviceIndex index) {
  auto& gen = generator(index);
  std::lock_guard<std::mutex> lock(gen.mutex_);
  auto state = gen.get_state();
  return py::bytes(static_cast<const char*>(state->data()), state->numel());
}

void set_rng_state(c10::DeviceIndex index, const std::string& bytes) {
  auto state = at::empty({static_cast<int64_t>(bytes.size())}, at::kByte);
  std::memcpy(state.data_ptr(), bytes.data(), bytes.size());
  auto& gen = generator(index);
  std::lock_guard<std::mutex> lock(gen.mutex_);
  gen.set_state(*state.unsafeGetTensorImpl());
}

// Python values for a generated kernel's parameters, one per signature character except 'e'.
std::vector<compiler::LaunchArg> launch_args(const std::string& signature, const py::tuple& values) {
  std::vector<compiler::LaunchArg> args;
  args.reserve(signature.size());
  size_t next = 0;
  for (char kind : signature) {
    compiler::LaunchArg a{kind};
    if (kind != 'e') {
      if (next >= values.size()) throw py::type_error("generated kernel: too few arguments");
      py::handle v = values[next++];
      if (kind == 'f' || kind == 'd') a.real = v.cast<double>();
      else a.integer = v.cast<int64_t>();
    }
    args.push_back(a);
  }
  if (next != values.size()) throw py::type_error("generated kernel: too many arguments");
  return args;
}

void bind_compiler(py::module& m) {
  using compiler::GeneratedKernel;
  using compiler::GeneratedProgram;
  py::class_<GeneratedProgram, std::shared_ptr<GeneratedProgram>>(m, "_GeneratedProgram")
      .def(py::init<std::string, std::string>())
      .def_property_readonly("source", &GeneratedProgram::source)
      .def("build", [](GeneratedProgram& p, const std::string& any_kernel) {
        py::gil_scoped_release no_gil;
        p.kernel(core::current_device(), any_kernel);
      });
  py::class_<GeneratedKernel, std::shared_ptr<GeneratedKernel>>(m, "_GeneratedKernel")
      .def(py::init<std::shared_ptr<GeneratedProgram>, std::string, std::string>())
      .def("launch", [](GeneratedKernel& k, const py::tuple& values, const std::vector<size_t>& global,
                        const std::vector<size_t>& local) {
        k.launch(launch_args(k.signature(), values), global, local);
      });
}

void bind_custom_kernels(py::module& m) {
  using extension::UserKernel;
  py::class_<UserKernel, std::shared_ptr<UserKernel>>(m, "_UserKernel")
      .def(py::init<std::string, std::string, std::string, std::string>())
      // (name, type, address space, const) per parameter; address space is one of "global",
      // "constant", "local", "value".
      .def("params", [](UserKernel& k) {
        std::vector<runtime::KernelParam> params;
        {
          py::gil_scoped_release no_gil;
          params = k.params();
        }
        static const char* spaces[] = {"global", "constant", "local", "value"};
        py::list out;
        for (const auto& p : params)
          out.append(py::make_tuple(p.name, p.type, spaces[static_cast<int>(p.space)], p.is_const));
        return out;
      })
      // Values: device addresses (ints) for buffers, byte counts for local memory, ints and floats.
      .def("launch", [](UserKernel& k, const py::tuple& values, const std::vector<size_t>& global,
                        const std::vector<size_t>& local) {
        std::vector<extension::LaunchValue> list(values.size());
        for (size_t i = 0; i < values.size(); ++i) {
          py::handle v = values[i];
          if (py::isinstance<py::float_>(v)) {
            list[i].is_real = true;
            list[i].real = v.cast<double>();
          } else {
            list[i].integer = v.cast<int64_t>();
          }
        }
        k.launch(list, global, local);
      });
  m.attr("_extension_api") = py::capsule(static_cast<const void*>(&extension::extension_api()),
                                         kExtensionApiCapsule);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "Drawbridge: the ocl PyTorch backend (native part)";

  // Local: torch's own functions keep torch's translation (DistBackendError, for one).
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const c10::OutOfMemoryError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what_without_backtrace());
    } catch (const c10::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what_without_backtrace());
    } catch (const c10::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what_without_backtrace());
    } catch (const c10::NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what_without_backtrace());
    } catch (const c10::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
    }
  });

  m.def("_device_count", [] { return static_cast<int>(core::device_count()); });
  m.def("_no_device_reason", [] { return runtime::no_device_reason(); });
  m.def("_listed_devices", [] {
    py::list out;
    for (const runtime::ListedDevice& d : runtime::listed_devices()) {
      py::dict entry;
      entry["platform_name"] = d.names.platform_name;
      entry["platform_vendor"] = d.names.platform_vendor;
      entry["name"] = d.names.device_name;
      entry["vendor"] = d.names.device_vendor;
      entry["type"] = d.names.type;
      entry["ocl_index"] = d.ocl_index >= 0 ? py::object(py::int_(d.ocl_index)) : py::none();
      out.append(entry);
    }
    return out;
  });
  m.def("_is_initialized", [] { return runtime::devices_discovered(); });
  m.def("_current_device", [] { return static_cast<int>(core::current_device()); });
  m.def("_set_device", [](int index) { core::set_current_device(static_cast<c10::DeviceIndex>(index)); });
  m.def("_device_properties", [](int index) { return device_properties(static_cast<c10::DeviceIndex>(index)); });
  m.def("_synchronize", [](int index) {
    py::gil_scoped_release no_gil;
    core::synchronize_device(static_cast<c10::DeviceIndex>(index));
  });
  m.def("_elapsed_ms", [](uintptr_t start, uintptr_t end) {
    py::gil_scoped_release no_gil;
    auto* a = reinterpret_cast<cl_event>(start);
    auto* b = reinterpret_cast<cl_event>(end);
    runtime::wait_for(b);
    return runtime::elapsed_ms(a, b);
  });
  m.def("_empty_host_cache", [] { core::host_allocator().empty_cache(); });

  m.def("_manual_seed", [](int index, uint64_t seed) {
    auto& gen = generator(static_cast<c10::DeviceIndex>(index));
    std::lock_guard<std::mutex> lock(gen.mutex_);
    gen.set_current_seed(seed);
  });
  m.def("_seed", [](int index) {
    auto& gen = generator(static_cast<c10::DeviceIndex>(index));
    std::lock_guard<std::mutex> lock(gen.mutex_);
    return gen.seed();
  });
  m.def("_initial_seed", [](int index) { return generator(static_cast<c10::DeviceIndex>(index)).current_seed(); });
  m.def("_get_rng_state", [](int index) { return rng_state(static_cast<c10::DeviceIndex>(index)); });
  m.def("_set_rng_state", [](int index, const std::string& state) {
    set_rng_state(static_cast<c10::DeviceIndex>(index), state);
  });

  m.def("_fallback_counts", &core::fallback_counts);
  m.def("_fallback_uses", [] {
    py::dict out;
    for (const auto& [op, use] : core::fallback_uses()) out[py::str(op)] = py::make_tuple(use.calls, use.seconds);
    return out;
  });
  m.def("_reset_fallback_counts", &core::reset_fallback_counts);
  m.def("_set_fallback_mode", [](const std::string& mode) {
    if (mode == "warn") core::set_fallback_mode(core::FallbackMode::Warn);
    else if (mode == "error") core::set_fallback_mode(core::FallbackMode::Error);
    else if (mode == "silent") core::set_fallback_mode(core::FallbackMode::Silent);
    else throw py::value_error("fallback mode must be 'warn', 'error' or 'silent', not '" + mode + "'");
  });
  m.def("_get_fallback_mode", [] {
    switch (core::fallback_mode()) {
      case core::FallbackMode::Error: return "error";
      case core::FallbackMode::Silent: return "silent";
      default: return "warn";
    }
  });

  m.def("_fft_plan_count", [] { return kernels::fft_plan_count(); });
  m.def("_program_cache_stats", [] {
    auto s = runtime::program_cache_stats();
    py::dict d;
    d["builds"] = s.builds;
    d["disk_hits"] = s.disk_hits;
    d["memory_hits"] = s.memory_hits;
    d["kernels"] = s.kernels;
    return d;
  });
  bind_compiler(m);
  bind_custom_kernels(m);
  python::bind_distributed(m);
  m.def("_launch_count", &runtime::launch_count);
  m.def("_driver_enqueue_seconds", &runtime::driver_enqueue_seconds);
  m.def("_set_kernel_timing", &runtime::set_kernel_timing);
  m.def("_kernel_timing", &runtime::kernel_timing);
  m.def("_build_library_program", [](int device, const std::string& file, const std::string& options) {
    py::gil_scoped_release no_gil;
    kernels::build_program(core::checked_device(static_cast<c10::DeviceIndex>(device)), file, options);
  });
  m.def("_reset_kernel_times", &runtime::reset_kernel_times);
  m.def("_kernel_times", [] {  // name -> (launches, seconds of device time)
    py::dict d;
    for (const auto& [name, t] : runtime::kernel_times())
      d[py::str(name)] = py::make_tuple(t.launches, static_cast<double>(t.nanoseconds) * 1e-9);
    return d;
  });
  m.def("_fail_next_gemm_calls_for_testing", &kernels::fail_next_gemm_calls_for_testing);
  m.def("_set_packed_gemm_scratch_bytes_for_testing", &kernels::set_packed_gemm_scratch_bytes_for_testing);
  m.def("_program_cache_dir", &runtime::program_cache_dir);
  m.def("_program_binaries_cached", [](int index) {
    return runtime::program_binaries_cached(core::checked_device(static_cast<c10::DeviceIndex>(index)));
  });
  m.def("_build_program", [](int index, const std::string& source, const std::string& options) {
    runtime::get_program(core::checked_device(static_cast<c10::DeviceIndex>(index)), "user program", source, options);
  });
}
