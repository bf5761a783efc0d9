// The run-time operation switch of the elementwise and reduction families' generic programs.
//
// A small launch (kSmallIteration) runs its kernel's generic program, whose operands have
// run-time dtypes. PoCL compiles each kernel of a program on its first launch (about 0.1 s each,
// mostly fixed costs), so a test run that reached every unary and binary operation in every
// compute type compiled hundreds of kernels that each ran a few microseconds of work. In the
// generic programs the one-line operations of a file ("UNARY(name, expression)" and the other
// shapes of common.clh) are instead cases of one kernel per arity (u_dispatch, b_dispatch,
// t_dispatch) that switches on an operation code at run time: one compile serves them all.
// Small reductions do the same: each REDUCTION line of reduce.cl is a case of r_dispatch, whose
// frame and case that file's REDUCE_DISPATCH_* macros write.
//
// The dispatch kernels are generated from the file's own lines: each case is the line's
// expression, under the same #if lines as in the file, so that a case exists exactly where the
// operation's kernel would. Kernels written out by hand (several outputs, other parameters) are
// not dispatched and keep their own kernels.
#pragma once

#include <cstdint>
#include <string>

namespace drawbridge::kernels {

struct DispatchedOp {
  uint64_t code;       // the case of the dispatch kernel
  const char* kernel;  // the dispatch kernel: r_dispatch, u_dispatch, b_dispatch or t_dispatch
};

// Option that builds a file's generic program with dispatch kernels instead of per-op ones.
constexpr const char* kOpDispatchOption = " -DOP_DISPATCH";

// The operation of kernel `name` (e.g. "b_add") of `file` as its dispatch kernel runs it, or
// nullptr when it is not one of the file's one-line operations. A dispatch kernel takes the
// operation's parameters p and q (zero where it has fewer) and the device's error flag, which
// integer divisions raise on a zero divisor (and the kernel on a code it lacks).
const DispatchedOp* dispatched_op(const std::string& file, const std::string& name);

// The dispatch kernels of `file`, under #ifdef OP_DISPATCH; empty for a file without one-line
// operations. Appended to the file's program source.
const std::string& dispatch_source(const std::string& file);

}  // namespace drawbridge::kernels
