// SPDX-License-Identifier: GPL-2.0
#include "child_process.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "sys_error.hpp"

namespace pinmatrix {

piped_child fork_piped(const std::function<void(int to_parent)> &body)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		throw last_sys_error("pipe2");
	unique_fd rd(fds[0]), wr(fds[1]);
	const pid_t pid = fork();
	if (pid < 0)
		throw last_sys_error("fork");
	if (pid == 0) {
		rd.reset();
		try {
			body(wr.get());
		} catch (...) {
			_exit(2);
		}
		_exit(0);
	}
	return {pid, std::move(rd)};
}

} // namespace pinmatrix
