// SPDX-License-Identifier: GPL-2.0
#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

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

namespace {

// Appends what FD has now, without waiting; false at its end or an error.
bool read_what_is_there(int fd, std::string &text)
{
	char buf[65536];
	const ssize_t got = read(fd, buf, sizeof(buf));
	if (got <= 0)
		return false;
	text.append(buf, size_t(got));
	return true;
}

} // namespace

std::optional<child_message> read_child_message(int fd, pid_t pid, std::chrono::steady_clock::time_point deadline)
{
	using namespace std::chrono;
	child_message m;
	for (;;) {
		const auto left = duration_cast<milliseconds>(deadline - steady_clock::now());
		if (left.count() <= 0)
			return std::nullopt;
		pollfd p{fd, POLLIN, 0};
		const int n = poll(&p, 1, int(std::min<int64_t>(left.count(), 250)));
		if (n < 0 && errno != EINTR)
			throw last_sys_error("poll");
		if (n > 0) {
			if (!read_what_is_there(fd, m.text))
				return m;	// its end closed
			continue;
		}
		if (n == 0 && waitpid(pid, &m.status, WNOHANG) == pid) {
			m.reaped = true;
			for (pollfd q{fd, POLLIN, 0}; poll(&q, 1, 0) > 0 && read_what_is_there(fd, m.text);)
				;
			return m;
		}
	}
}

} // namespace pinmatrix
