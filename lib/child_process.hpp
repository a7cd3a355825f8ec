// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <functional>

#include "unique_fd.hpp"

namespace pinmatrix {

// A child process that runs body(fd), fd the write end of a pipe, and then
// _exit(0) (_exit(2) should it throw); the parent gets its pid and the
// read end. Throws sys_error when it cannot fork.
struct piped_child {
	pid_t pid;
	unique_fd from_child;
};
piped_child fork_piped(const std::function<void(int to_parent)> &body);

} // namespace pinmatrix
