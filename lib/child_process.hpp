// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

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

// What child PID wrote on FD (its pipe's read end) until it closed its end,
// or until it exited: a process it left behind (a helper stuck in the
// kernel) may hold the pipe open long after, and the message is whole once
// the child is gone. nullopt at the deadline. When the child was seen to
// exit it is reaped here: reaped, and its wait status.
struct child_message {
	std::string text;
	bool reaped = false;
	int status = 0;
};
std::optional<child_message> read_child_message(int fd, pid_t pid, std::chrono::steady_clock::time_point deadline);

} // namespace pinmatrix
