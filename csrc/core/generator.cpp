#include "core/generator.h"

#include <cstring>
#include <deque>
#include <mutex>

#include <ATen/ops/empty.h>
#include <c10/core/GeneratorImpl.h>

#include "core/device_state.h"

namespace drawbridge::core {

namespace {
constexpr uint64_t kDefaultSeed = 67280421310721ull;  // torch's default_rng_seed_val
constexpr size_t kStateBytes = 16;                    // seed (u64) then offset (i64), as CUDA
}  // namespace

PhiloxGenerator::PhiloxGenerator(c10::DeviceIndex device)
    : c10::GeneratorImpl(c10::Device(kOcl, device), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(kDefaultSeed) {}

void PhiloxGenerator::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}
uint64_t PhiloxGenerator::current_seed() const { return seed_; }

uint64_t PhiloxGenerator::seed() {
  uint64_t s = c10::detail::getNonDeterministicRandom(true);
  set_current_seed(s);
  return s;
}

void PhiloxGenerator::set_offset(uint64_t offset) {
  TORCH_CHECK(offset % 4 == 0, "offset must be a multiple of 4");
  offset_ = offset;
}
uint64_t PhiloxGenerator::get_offset() const { return offset_; }

void PhiloxGenerator::set_state(const c10::TensorImpl& state) {
  TORCH_CHECK_TYPE(state.dtype() == caffe2::TypeMeta::Make<uint8_t>(),
                   "RNG state must be a torch.ByteTensor");
  TORCH_CHECK(state.numel() == static_cast<int64_t>(kStateBytes), "RNG state is wrongly sized: expected ",
              kStateBytes, " bytes, got ", state.numel());
  const auto* bytes = static_cast<const uint8_t*>(state.data());
  uint64_t seed = 0;
  int64_t offset = 0;
  std::memcpy(&seed, bytes, 8);
  std::memcpy(&offset, bytes + 8, 8);
  seed_ = seed;
  offset_ = static_cast<uint64_t>(offset);
}

c10::intrusive_ptr<c10::TensorImpl> PhiloxGenerator::get_state() const {
  auto state = at::empty({static_cast<int64_t>(kStateBytes)}, at::kByte);
  auto* bytes = state.data_ptr<uint8_t>();
  int64_t offset = static_cast<int64_t>(offset_);
  std::memcpy(bytes, &seed_, 8);
  std::memcpy(bytes + 8, &offset, 8);
  return state.getIntrusivePtr();
}

std::pair<uint64_t, uint64_t> PhiloxGenerator::philox_inputs(uint64_t increment) {
  increment = (increment + 3) / 4 * 4;
  uint64_t first = offset_;
  offset_ += increment;
  return {seed_, first};
}

PhiloxGenerator* PhiloxGenerator::clone_impl() const {
  auto* g = new PhiloxGenerator(device().index());
  g->seed_ = seed_;
  g->offset_ = offset_;
  return g;
}

const at::Generator& default_generator(c10::DeviceIndex device) {
  // Never destroyed (late users at exit); a deque keeps references valid as it grows.
  static auto* mutex = new std::mutex();
  static auto* all = new std::deque<at::Generator>();
  if (device < 0) device = current_device();
  checked_device(device);
  std::lock_guard<std::mutex> lock(*mutex);
  auto& generators = *all;
  while (generators.size() <= static_cast<size_t>(device))
    generators.push_back(at::make_generator<PhiloxGenerator>(static_cast<c10::DeviceIndex>(generators.size())));
  return generators[device];
}

}  // namespace drawbridge::core
