// SPDX-License-Identifier: GPL-2.0
#include "running_kernel.hpp"

#include "kernel_info.hpp"

namespace pinmatrix {

std::optional<kernel_version> running_kernel_version()
{
	static const kernel_info k = read_kernel_info();
	static const auto version = upstream_version(k.release, k.version);
	return version;
}

} // namespace pinmatrix
