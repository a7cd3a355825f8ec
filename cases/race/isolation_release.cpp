// SPDX-License-Identifier: GPL-2.0
#include "isolation_release.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "clock.hpp"
#include "sys_error.hpp"
#include "verbs.hpp"

namespace pinmatrix::race_cases {

namespace {

struct request {
	uint32_t lock_id;	// 0: end
};

struct report {
	uint32_t isolated;
	uint32_t pad;
	int64_t released_ns;
};

void sleep_ms(int64_t ms)
{
	timespec ts{time_t(ms / 1000), long(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) && errno == EINTR) {
	}
}

bool read_all(int fd, void *to, size_t n)
{
	auto *p = static_cast<char *>(to);
	while (n) {
		const ssize_t got = read(fd, p, n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		p += got;
		n -= size_t(got);
	}
	return true;
}

// Whether a task waits to lock one of the folios of lock pin `id` (its
// struct pinmatrix_pin_info.lock_waiters, from LIST on the shared file).
bool lock_waited_for(int module_fd, uint32_t id)
{
	pinmatrix_pin_info infos[16] = {};
	pinmatrix_list list{sizeof(list), 16, reinterpret_cast<uintptr_t>(infos)};
	if (ioctl(module_fd, PINMATRIX_IOC_LIST, &list))
		return false;
	for (uint32_t i = 0; i < list.count && i < 16; i++)
		if (infos[i].id == id)
			return infos[i].lock_waiters > 0;
	return false;
}

// The helper's life: one request a round, until lock id 0 or its end of
// file. Only system calls and the stack: it was forked.
[[noreturn]] void helper_main(int module_fd, int requests, int go, int reports, int64_t wait_ms, int64_t window_ms)
{
	request rq{};
	while (read_all(requests, &rq, sizeof(rq)) && rq.lock_id) {
		const int64_t until = monotonic_raw_ns() + wait_ms * 1000000;
		bool isolated;
		while (!(isolated = lock_waited_for(module_fd, rq.lock_id)) && monotonic_raw_ns() < until)
			sleep_ms(10);
		const char verdict = isolated ? 'I' : 'N';
		if (write(go, &verdict, 1) != 1)
			break;
		if (isolated)
			sleep_ms(window_ms);
		pinmatrix_unpin unpin{sizeof(unpin), rq.lock_id};
		(void)ioctl(module_fd, PINMATRIX_IOC_UNPIN, &unpin);
		const report rp{isolated, 0, monotonic_raw_ns()};
		if (write(reports, &rp, sizeof(rp)) != sizeof(rp))
			break;
	}
	_exit(0);
}

void make_pipe(unique_fd &read_end, unique_fd &write_end)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		throw last_sys_error("pipe2 for the isolation helper");
	read_end = unique_fd(fds[0]);
	write_end = unique_fd(fds[1]);
}

} // namespace

isolation_release::isolation_release(const pin_module &module, std::chrono::milliseconds wait,
				     std::chrono::milliseconds window)
{
	unique_fd request_read, go_write, report_write;
	make_pipe(request_read, request_write_);
	make_pipe(go_read_, go_write);
	make_pipe(report_read_, report_write);
	pid_ = fork();
	if (pid_ < 0)
		throw last_sys_error("fork of the isolation helper");
	if (pid_ == 0)
		helper_main(module.fd(), request_read.get(), go_write.get(), report_write.get(), wait.count(),
			    window.count());
}

isolation_release::~isolation_release()
{
	const request end{};
	(void)!write(request_write_.get(), &end, sizeof(end));
	request_write_ = unique_fd();
	int status;
	while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
	}
}

void isolation_release::start(uint32_t lock_id) const
{
	const request rq{lock_id};
	if (write(request_write_.get(), &rq, sizeof(rq)) != sizeof(rq))
		throw last_sys_error("a request to the isolation helper");
}

isolation_release::timings isolation_release::finish() const
{
	report rp{};
	if (!read_all(report_read_.get(), &rp, sizeof(rp)))
		throw last_sys_error("the isolation helper's report");
	return {rp.isolated != 0, rp.released_ns};
}

} // namespace pinmatrix::race_cases
