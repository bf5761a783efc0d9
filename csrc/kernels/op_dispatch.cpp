#include "kernels/op_dispatch.h"

#include <map>
#include <sstream>
#include <unordered_map>

#include <c10/util/Exception.h>

#include "core/device_state.h"
#include "kernels/embedded_sources.h"

namespace drawbridge::kernels {

namespace {

// How a one-line operation takes its parameters (the shapes of common.clh).
enum class OpShape : uint8_t {
  plain,     // no parameter
  p,         // a compute-type parameter p
  pq,        // p and q
  division,  // the device's error flag, raised on a zero divisor
  reduction, // a REDUCTION of reduce.cl, whose frame and case that file's macros write
};

struct Shape {
  const char* macro;
  int arity;
  OpShape shape;
};
constexpr Shape kShapes[] = {
    {"UNARY", 1, OpShape::plain},       {"UNARY_P", 1, OpShape::p},      {"UNARY_PQ", 1, OpShape::pq},
    {"BINARY", 2, OpShape::plain},      {"BINARY_P", 2, OpShape::p},     {"BINARY_PQ", 2, OpShape::pq},
    {"BINARY_DIVISION", 2, OpShape::division}, {"TERNARY_P", 3, OpShape::p},
    {"REDUCTION", 0, OpShape::reduction},
};
// By arity; arity 0 is the reductions'.
constexpr const char* kPrefixes[] = {"r_", "u_", "b_", "t_"};
constexpr const char* kDispatchKernels[] = {"r_dispatch", "u_dispatch", "b_dispatch", "t_dispatch"};

// "MACRO(name, expression)", optionally followed by a // comment, with MACRO one of kShapes.
bool parse_op_line(const std::string& line, const Shape*& shape, std::string& name, std::string& expression) {
  const size_t open = line.find('(');
  if (open == std::string::npos) return false;
  const std::string macro = line.substr(0, open);
  shape = nullptr;
  for (const Shape& s : kShapes)
    if (macro == s.macro) shape = &s;
  if (!shape) return false;
  const size_t comma = line.find(',', open);
  TORCH_INTERNAL_ASSERT(comma != std::string::npos, "op_dispatch: no expression in ", line);
  name = line.substr(open + 1, comma - open - 1);
  int depth = 1;
  char quote = 0;
  size_t i = comma + 1;
  for (; i < line.size() && depth > 0; ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote && line[i - 1] != '\\') quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      --depth;
    }
  }
  TORCH_INTERNAL_ASSERT(depth == 0, "op_dispatch: an operation line must fit on one line: ", line);
  expression = line.substr(comma + 1, i - 1 - comma - 1);
  return true;
}

bool is_conditional(const std::string& line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos || line[i] != '#') return false;
  i = line.find_first_not_of(" \t", i + 1);
  if (i == std::string::npos) return false;
  for (const char* directive : {"if", "elif", "else", "endif"})  // "if" also covers ifdef and ifndef
    if (line.compare(i, std::char_traits<char>::length(directive), directive) == 0) return true;
  return false;
}

struct FileDispatch {
  std::unordered_map<std::string, DispatchedOp> ops;  // by kernel name
  std::string source;
};

FileDispatch scan(const std::string& body) {
  FileDispatch file;
  std::string cases[4];  // per arity: the switch's lines, with every conditional of the file
  std::istringstream lines(body);
  std::string line, name, expression;
  const Shape* shape = nullptr;
  while (std::getline(lines, line)) {
    if (is_conditional(line)) {
      for (std::string& arity_cases : cases) arity_cases += line + "\n";
      continue;
    }
    if (!parse_op_line(line, shape, name, expression)) continue;
    const std::string kernel = kPrefixes[shape->arity] + name;
    // A name in two sections (float and integer) keeps one code, whatever its shape in each.
    auto it = file.ops.emplace(kernel, DispatchedOp{file.ops.size(), kDispatchKernels[shape->arity]}).first;
    std::string& out = cases[shape->arity];
    out += "    case " + std::to_string(it->second.code) + ": ";
    if (shape->shape == OpShape::reduction) {
      out += "REDUCE_DISPATCH_CASE(" + kernel + "); break;\n";
      continue;
    }
    if (shape->shape == OpShape::division)
      out += "if (b == 0) { atomic_xchg(error, " + std::to_string(static_cast<int>(core::DeviceAssert::zero_division)) +
             "); continue; } ";
    out += "OUTPUT(" + expression + "); break;\n";
  }
  if (file.ops.empty()) return file;
  // Every kernel takes the same parameters, whatever its operations use; an unknown code raises the
  // device's error flag rather than leave the output unwritten.
  std::string& source = file.source;
  source = "\n#ifdef OP_DISPATCH\n";
  const std::string missing = std::to_string(static_cast<int>(core::DeviceAssert::missing_operation));
  if (cases[0].find("case ") != std::string::npos)
    source += std::string("__kernel void ") + kDispatchKernels[0] +
              "(REDUCE_DISPATCH_PARAMS, ulong op_code, __global int* error) {\n  REDUCE_DISPATCH_BEGIN\n"
              "  switch (op_code) {\n" + cases[0] + "    default: atomic_xchg(error, " + missing + ");\n  }\n"
              "  REDUCE_DISPATCH_END\n}\n";
  for (int arity = 1; arity <= 3; ++arity) {
    if (cases[arity].find("case ") == std::string::npos) continue;
    source += "#if NARGS == " + std::to_string(arity + 1) + "\n__kernel void " + kDispatchKernels[arity] + "(IterDesc d";
    for (int k = 0; k <= arity; ++k) source += ", OPERAND(" + std::to_string(k) + ")";
    source += ", ulong op_code, ulong p_bits, ulong q_bits, __global int* error) {\n  ELEMENTWISE_BEGIN\n";
    for (int k = 1; k <= arity; ++k) source += std::string("  ct ") + "abc"[k - 1] + " = INPUT(" + std::to_string(k) + ");\n";
    source += "  const ct p = bits_to_ct(p_bits), q = bits_to_ct(q_bits);\n  switch (op_code) {\n" + cases[arity] +
              "    default: atomic_xchg(error, " + missing + "); continue;\n  }\n  ELEMENTWISE_END\n}\n#endif\n";
  }
  source += "#endif  // OP_DISPATCH\n";
  return file;
}

const std::map<std::string, FileDispatch>& dispatch_table() {
  static const auto* table = [] {
    auto* files = new std::map<std::string, FileDispatch>();
    for (const auto& [file, body] : embedded_sources())
      if (file.size() > 3 && file.compare(file.size() - 3, 3, ".cl") == 0) files->emplace(file, scan(body));
    return files;
  }();
  return *table;
}

}  // namespace

const DispatchedOp* dispatched_op(const std::string& file, const std::string& name) {
  const auto& table = dispatch_table();
  auto it = table.find(file);
  if (it == table.end()) return nullptr;
  auto op = it->second.ops.find(name);
  return op == it->second.ops.end() ? nullptr : &op->second;
}

const std::string& dispatch_source(const std::string& file) {
  static const std::string none;
  const auto& table = dispatch_table();
  auto it = table.find(file);
  return it == table.end() ? none : it->second.source;
}

}  // namespace drawbridge::kernels
