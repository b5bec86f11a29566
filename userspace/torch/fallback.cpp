// SPDX-License-Identifier: MIT
/*
 * Every aten op without a Maia kernel: the boxed CPU fallback (operands
 * copied to the CPU, the CPU kernel, results and in-place updates copied
 * back), counted per op; in strict mode (maia.torch.strict(), or
 * MAIA_TORCH_STRICT=1) it raises instead, so a test proves where ops ran.
 */
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include "runtime.h"

namespace maia_torch {

static void maia_fallback(const c10::OperatorHandle &op, torch::jit::Stack *stack)
{
	const c10::OperatorName &name = op.schema().operator_name();

	count_fallback(name.overload_name.empty() ? name.name : name.name + "." + name.overload_name);
	at::native::cpu_fallback(op, stack);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m)
{
	m.fallback(torch::CppFunction::makeFromBoxedFunction<&maia_fallback>());
}

} // namespace maia_torch
