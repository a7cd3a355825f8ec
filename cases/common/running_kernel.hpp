// SPDX-License-Identifier: GPL-2.0
#pragma once

// The upstream version of the kernel this runs on, which every suite's
// rows by kernel version and the known kernel bugs are judged under
// (matrix/kernel_version.hpp reads it from a release and uname -v).

#include <optional>

#include "kernel_version.hpp"

namespace pinmatrix {

// upstream_version() of this machine's kernel, read once; nullopt when it
// cannot be read (a kernel whose rows are then unknown, never a default).
std::optional<kernel_version> running_kernel_version();

} // namespace pinmatrix
