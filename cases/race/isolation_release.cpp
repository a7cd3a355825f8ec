// SPDX-License-Identifier: GPL-2.0
#include "isolation_release.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "clock.hpp"
#include "sys_error.hpp"
#include "verbs.hpp"

namespace pinmatrix::race_cases {

namespace {

struct request {
	uint32_t lock_id;	// 0: end
	pid_t second_tid;	// the second registration's thread
};

struct report {
	uint32_t isolated;
	uint32_t window_ended;	// isolation_release::window_end
	int64_t released_ns;
	int64_t second_cpu_ms;	// the second registration's CPU time in the window
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

// CPU time (user and system) of thread tid of process pid, in ms; -1 when
// it cannot be read. Fields 14 and 15 of /proc/PID/task/TID/stat, after
// the command's closing parenthesis, in clock ticks.
int64_t thread_cpu_ms(pid_t pid, pid_t tid)
{
	char path[64], text[1024];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", int(pid), int(tid));
	const int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	const ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = 0;
	const char *p = strrchr(text, ')');
	int field = 2;
	long long ticks[2] = {-1, -1};
	for (; p && *p; p++)
		if (*p == ' ' && ++field >= 14 && field <= 15)
			ticks[field - 14] = strtoll(p + 1, nullptr, 10);
	const long hz = sysconf(_SC_CLK_TCK);
	if (ticks[0] < 0 || ticks[1] < 0 || hz <= 0)
		return -1;
	return (ticks[0] + ticks[1]) * 1000 / hz;
}

// Whether fd has a byte to read within ms (the second registration
// returned); the byte is taken.
bool byte_within(int fd, int ms)
{
	pollfd p{fd, POLLIN, 0};
	char byte;
	return poll(&p, 1, ms) == 1 && read(fd, &byte, 1) == 1;
}

// The window after 'I': it ends as soon as the second registration has
// returned (a kernel that lets it succeed in place does so at once) or has
// spent retry_proof_ms of CPU in the call without returning (a kernel that
// retries it, in a loop, until the isolation ends), else at window_ms (a
// kernel that makes it wait asleep).
report hold_window(int returned, pid_t second_tid, int64_t window_ms, int64_t retry_proof_ms)
{
	report rp{1, isolation_release::ended_at_bound, 0, 0};
	const pid_t owner = getppid();
	const int64_t cpu0 = thread_cpu_ms(owner, second_tid);
	const int64_t until = monotonic_raw_ns() + window_ms * 1000000;
	while (monotonic_raw_ns() < until) {
		if (byte_within(returned, 10)) {
			rp.window_ended = isolation_release::ended_on_return;
			break;
		}
		const int64_t cpu = thread_cpu_ms(owner, second_tid);
		if (cpu0 >= 0 && cpu >= 0)
			rp.second_cpu_ms = cpu - cpu0;
		if (cpu0 >= 0 && cpu >= 0 && cpu - cpu0 >= retry_proof_ms) {
			rp.window_ended = isolation_release::ended_on_retries;
			break;
		}
	}
	return rp;
}

// The helper's life: one request a round, until lock id 0 or its end of
// file. Only system calls and the stack: it was forked.
[[noreturn]] void helper_main(int module_fd, int requests, int go, int returned, int reports, int64_t wait_ms,
			      int64_t window_ms, int64_t retry_proof_ms)
{
	request rq{};
	while (read_all(requests, &rq, sizeof(rq)) && rq.lock_id) {
		while (byte_within(returned, 0)) {
		}	// a byte of an earlier round
		const int64_t until = monotonic_raw_ns() + wait_ms * 1000000;
		bool isolated;
		while (!(isolated = lock_waited_for(module_fd, rq.lock_id)) && monotonic_raw_ns() < until)
			sleep_ms(10);
		const char verdict = isolated ? 'I' : 'N';
		if (write(go, &verdict, 1) != 1)
			break;
		report rp{0, isolation_release::ended_at_bound, 0, 0};
		if (isolated)
			rp = hold_window(returned, rq.second_tid, window_ms, retry_proof_ms);
		pinmatrix_unpin unpin{sizeof(unpin), rq.lock_id};
		(void)ioctl(module_fd, PINMATRIX_IOC_UNPIN, &unpin);
		rp.released_ns = monotonic_raw_ns();
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
				     std::chrono::milliseconds window, std::chrono::milliseconds retry_proof)
{
	unique_fd request_read, go_write, returned_read, report_write;
	make_pipe(request_read, request_write_);
	make_pipe(go_read_, go_write);
	make_pipe(returned_read, returned_write_);
	make_pipe(report_read_, report_write);
	pid_ = fork();
	if (pid_ < 0)
		throw last_sys_error("fork of the isolation helper");
	if (pid_ == 0)
		helper_main(module.fd(), request_read.get(), go_write.get(), returned_read.get(), report_write.get(),
			    wait.count(), window.count(), retry_proof.count());
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

void isolation_release::start(uint32_t lock_id, pid_t second_tid) const
{
	const request rq{lock_id, second_tid};
	if (write(request_write_.get(), &rq, sizeof(rq)) != sizeof(rq))
		throw last_sys_error("a request to the isolation helper");
}

isolation_release::timings isolation_release::finish() const
{
	report rp{};
	if (!read_all(report_read_.get(), &rp, sizeof(rp)))
		throw last_sys_error("the isolation helper's report");
	return {rp.isolated != 0, rp.released_ns, window_end(rp.window_ended), rp.second_cpu_ms};
}

void isolation_release::second_returned() const
{
	const char byte = 'R';
	(void)!write(returned_write_.get(), &byte, 1);
}

const char *name(isolation_release::window_end e)
{
	switch (e) {
	case isolation_release::ended_on_return:
		return "the second registration returned";
	case isolation_release::ended_on_retries:
		return "the second registration was retrying (its CPU time in the call)";
	case isolation_release::ended_at_bound:
		break;
	}
	return "the window's bound";
}

} // namespace pinmatrix::race_cases
