#include "ops/pointwise.h"

#include <cstring>

#include <ATen/Dispatch_v2.h>

namespace drawbridge::ops {

void check_dtype(const char* op, c10::ScalarType type, Dtypes allowed) {
  bool ok = true;
  switch (allowed) {
    case Dtypes::All: ok = true; break;
    case Dtypes::Floating: ok = c10::isFloatingType(type); break;
    case Dtypes::Integral: ok = c10::isIntegralType(type, /*includeBool=*/false); break;
    case Dtypes::IntegralAndBool: ok = c10::isIntegralType(type, /*includeBool=*/true); break;
    case Dtypes::NotBool: ok = type != c10::kBool; break;
  }
  ok = ok && !c10::isComplexType(type);
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", op, "\" not implemented for '", c10::toString(type), "' on ocl");
}

uint64_t scalar_bits(const c10::Scalar& value, c10::ScalarType compute) {
  uint64_t bits = 0;
  AT_DISPATCH_V2(compute, "ocl_scalar_argument", AT_WRAP([&] {
    scalar_t v = value.to<scalar_t>();
    if constexpr (std::is_integral_v<scalar_t>)
      bits = static_cast<uint64_t>(static_cast<int64_t>(v));
    else
      std::memcpy(&bits, &v, sizeof(scalar_t));
  }), AT_EXPAND(AT_ALL_TYPES), at::kBool);
  return bits;
}

namespace {
template <typename T>
T convert_like_fill(const c10::Scalar& value, bool checked) {
  if (checked) return value.to<T>();
  if constexpr (std::is_same_v<T, bool>) return value.toBool();
  else if constexpr (std::is_integral_v<T>) return static_cast<T>(value.toLong());
  else if constexpr (c10::is_complex<T>::value) return static_cast<T>(value.toComplexDouble());
  else return static_cast<T>(value.toDouble());
}
}  // namespace

ElementBits element_bits(const c10::Scalar& value, c10::ScalarType type, bool checked) {
  ElementBits bits;
  AT_DISPATCH_V2(type, "ocl_element_bits", AT_WRAP([&] {
    scalar_t v = convert_like_fill<scalar_t>(value, checked);
    static_assert(sizeof(scalar_t) <= sizeof(bits.bytes));
    std::memcpy(bits.bytes, &v, sizeof(scalar_t));
    bits.size = sizeof(scalar_t);
  }), AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kHalf, at::kBFloat16, at::kBool, AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES));
  return bits;
}

}  // namespace drawbridge::ops
