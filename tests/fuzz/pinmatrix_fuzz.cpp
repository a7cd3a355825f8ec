// SPDX-License-Identifier: GPL-2.0
// A seeded random fuzzer for /dev/pinmatrix, run inside a guest: every ioctl
// with bad pointers, unmapped and read-only ranges, huge, zero and unaligned
// lengths and addresses, stale and double-released pin ids, wrong struct
// sizes and unknown commands, from several threads at once, with forks that
// exit (or are killed) while holding pins. It passes when the kernel logged
// no oops, WARN, BUG or lockdep splat and every FOLL_PIN was released.
//
// Usage: pinmatrix_fuzz [--seed N] [--calls N] [--threads N] [--forks N]
// Loads $PINMATRIX_MODULE when /dev/pinmatrix is absent. Exit 0 clean, 1 not.

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "kernel_info.hpp"
#include "kernel_log.hpp"
#include "pinmatrix.h"

namespace {

struct options {
	uint64_t seed = 1;
	long calls = 20000;
	int threads = 4;
	int forks = 8;
};

struct guarded_buffer {
	char *data = nullptr;
	size_t len = 1 << 20;

	guarded_buffer()
	{
		data = static_cast<char *>(mmap(nullptr, len + 4096, PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		mprotect(data + len, 4096, PROT_NONE);
	}
	~guarded_buffer() { munmap(data, len + 4096); }
	guarded_buffer(const guarded_buffer &) = delete;
	guarded_buffer &operator=(const guarded_buffer &) = delete;
};

// Addresses worth trying: mapped, read-only, unmapped, unaligned, kernel,
// NULL, the last page of user space, a range that runs off a mapping.
struct arena {
	char *rw = nullptr;
	char *ro = nullptr;
	char *hole = nullptr;
	size_t len = 64 * 4096;

	arena()
	{
		rw = static_cast<char *>(mmap(nullptr, len, PROT_READ | PROT_WRITE,
					      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0));
		ro = static_cast<char *>(mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		// Inaccessible, but kept reserved: an unmapped hole would soon hold
		// a thread stack, and the kernel would rightly write results there.
		hole = static_cast<char *>(mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	}

	uint64_t address(std::mt19937_64 &g) const
	{
		switch (g() % 10) {
		case 0: return g() % 2 ? 0 : 0x1000; // below mmap_min_addr: never mapped
		case 1: return uint64_t(ro) + (g() % 64) * 4096;
		case 2: return uint64_t(hole) + (g() % 64) * 4096;
		case 3: return uint64_t(rw) + g() % len;			// unaligned
		case 4: return 0xffff800000000000ULL + (g() % 1024) * 4096;	// kernel
		case 5: return 0x7ffffffff000ULL;				// top of user space
		case 6: return g();
		case 7: return uint64_t(rw) + len - 4096;			// runs off the end
		default: return uint64_t(rw) + (g() % 64) * 4096;
		}
	}
	uint64_t npages(std::mt19937_64 &g) const
	{
		switch (g() % 8) {
		case 0: return 0;
		case 1: return ~0ULL;
		case 2: return 1ULL << (g() % 40);
		case 3: return uint64_t(INT32_MAX) + 1;
		default: return 1 + g() % 64;
		}
	}
	// An output buffer: good, NULL, read-only, unmapped or too small. The
	// good one ends at a PROT_NONE guard page, so a huge count makes the
	// kernel fault (EFAULT) instead of writing over our own heap.
	uint64_t out_buffer(std::mt19937_64 &g, const guarded_buffer &good) const
	{
		switch (g() % 6) {
		case 0: return 0;
		case 1: return uint64_t(ro);
		case 2: return uint64_t(hole);
		case 3: return uint64_t(good.data) + good.len - 8;
		default: return uint64_t(good.data);
		}
	}
};

uint32_t struct_size(std::mt19937_64 &g, uint32_t right)
{
	switch (g() % 8) {
	case 0: return 0;
	case 1: return right - 4;
	case 2: return right + 8;
	case 3: return uint32_t(g());
	default: return right;
	}
}

std::atomic<long> calls_done{0};
std::atomic<long> calls_ok{0};

void fuzz_thread(int fd, uint64_t seed, long calls, const arena &a)
{
	std::mt19937_64 g(seed);
	std::vector<uint32_t> ids;
	guarded_buffer buffer;
	for (long i = 0; i < calls; i++) {
		long ret = 0;
		switch (g() % 6) {
		case 0: {
			pinmatrix_probe p{};
			p.size = struct_size(g, sizeof(p));
			p.flags = g() % 4 == 0 ? uint32_t(g()) : uint32_t(g() % 2);
			p.addr = a.address(g);
			p.npages = a.npages(g) % (g() % 2 ? 65 : ~0ULL);
			p.pages = a.out_buffer(g, buffer);
			ret = ioctl(fd, PINMATRIX_IOC_PROBE, &p);
			break;
		}
		case 1:
		case 2: {
			pinmatrix_pin p{};
			p.size = struct_size(g, sizeof(p));
			p.contract = uint32_t(g() % 5);
			p.flags = g() % 6 == 0 ? uint32_t(g()) : uint32_t(g() % 2);
			p.addr = a.address(g);
			p.npages = a.npages(g) % (g() % 2 ? 65 : ~0ULL);
			p.pfns = a.out_buffer(g, buffer);
			ret = ioctl(fd, PINMATRIX_IOC_PIN, &p);
			if (!ret)
				ids.push_back(p.id);
			break;
		}
		case 3: {
			pinmatrix_unpin u{};
			u.size = struct_size(g, sizeof(u));
			// Held, already released, or made up.
			u.id = !ids.empty() && g() % 2 ? ids[g() % ids.size()] : uint32_t(g() % 8);
			ret = ioctl(fd, PINMATRIX_IOC_UNPIN, &u);
			break;
		}
		case 4: {
			pinmatrix_list l{};
			l.size = struct_size(g, sizeof(l));
			l.count = uint32_t(g() % 3 == 0 ? g() : g() % 16);
			l.pins = a.out_buffer(g, buffer);
			ret = ioctl(fd, PINMATRIX_IOC_LIST, &l);
			break;
		}
		default: {
			// Unknown numbers, wrong directions and sizes, NULL arguments.
			const unsigned long cmds[] = {
				PINMATRIX_IOC_INFO, _IO(PINMATRIX_IOC_MAGIC, uint8_t(g())),
				_IOWR(PINMATRIX_IOC_MAGIC, 0x02, uint64_t), _IOR(PINMATRIX_IOC_MAGIC, 0x00, char[3]),
				(unsigned long)g()};
			const unsigned long cmd = cmds[g() % 5];
			void *arg = g() % 3 ? static_cast<void *>(buffer.data) : nullptr;
			ret = ioctl(fd, cmd, arg);
			break;
		}
		}
		calls_done++;
		if (!ret)
			calls_ok++;
	}
}

// A child that pins and then exits or is killed while holding its pins.
void fork_holders(const options &o, std::mt19937_64 &g, const arena &a)
{
	for (int i = 0; i < o.forks; i++) {
		int ready[2];
		if (pipe(ready))
			return;
		pid_t pid = fork();
		if (pid == 0) {
			close(ready[0]);
			int fd = open("/dev/pinmatrix", O_RDWR);
			for (uint32_t c = 1; c <= 3 && fd >= 0; c++) {
				pinmatrix_pin p{};
				std::vector<uint64_t> pfns(16);
				p.size = sizeof(p);
				p.contract = c;
				p.addr = uint64_t(a.rw) + (c - 1) * 16 * 4096;
				p.npages = 16;
				p.pfns = uint64_t(pfns.data());
				ioctl(fd, PINMATRIX_IOC_PIN, &p);
			}
			char x = 1;
			if (write(ready[1], &x, 1) != 1)
				_exit(2);
			if (i % 2)
				_exit(0); // exit with the fd open: release on exit
			for (;;)
				pause();
		}
		close(ready[1]);
		char x;
		if (read(ready[0], &x, 1) != 1) {
			/* the child failed before pinning: nothing to check */
		}
		close(ready[0]);
		if (g() % 2 || i % 2 == 0)
			kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
	}
}

std::string kernel_complaints()
{
	std::string log;
	try {
		log = pinmatrix::read_kernel_log();
	} catch (const std::system_error &e) {
		return std::string("cannot read the kernel log: ") + e.what();
	}
	const auto found = pinmatrix::kernel_alarms(log);
	return found.empty() ? "" : found.front();
}

bool load_module()
{
	if (std::filesystem::exists("/dev/pinmatrix"))
		return true;
	const char *ko = std::getenv("PINMATRIX_MODULE");
	int fd = ko ? open(ko, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0 || syscall(SYS_finit_module, fd, "", 0)) {
		std::fprintf(stderr, "pinmatrix_fuzz: cannot load %s: %s\n", ko ? ko : "$PINMATRIX_MODULE",
			     strerror(errno));
		return false;
	}
	close(fd);
	for (int i = 0; i < 100 && !std::filesystem::exists("/dev/pinmatrix"); i++)
		usleep(10'000);
	return true;
}

} // namespace

int main(int argc, char **argv)
{
	options o;
	for (int i = 1; i + 1 < argc; i += 2) {
		const std::string k = argv[i];
		char *end = nullptr;
		const long long v = std::strtoll(argv[i + 1], &end, 10);
		if (!end || *end || v < 0) {
			std::fprintf(stderr, "pinmatrix_fuzz: bad value '%s' for %s\n", argv[i + 1], k.c_str());
			return 2;
		}
		if (k == "--seed")
			o.seed = uint64_t(v);
		else if (k == "--calls")
			o.calls = long(v);
		else if (k == "--threads" && v >= 1 && v <= 64)
			o.threads = int(v);
		else if (k == "--forks")
			o.forks = int(v);
		else {
			std::fprintf(stderr, "usage: %s [--seed N] [--calls N] [--threads 1-64] [--forks N]\n",
				     argv[0]);
			return 2;
		}
	}
	if (!load_module())
		return 2;

	arena a;
	std::mt19937_64 g(o.seed);
	const auto before = pinmatrix::read_vmstat();
	{
		// Several threads on one fd (shared pin table) and one fd each.
		int shared = open("/dev/pinmatrix", O_RDWR);
		std::vector<int> fds;
		std::vector<std::thread> threads;
		for (int t = 0; t < o.threads; t++) {
			int fd = t % 2 ? shared : open("/dev/pinmatrix", O_RDWR);
			if (fd != shared)
				fds.push_back(fd);
			threads.emplace_back(fuzz_thread, fd, o.seed * 1000 + t, o.calls / o.threads, std::cref(a));
		}
		fork_holders(o, g, a);
		for (auto &t : threads)
			t.join();
		for (int fd : fds)
			close(fd);
		close(shared); // releases whatever the threads left pinned
	}
	const auto after = pinmatrix::read_vmstat();
	const int64_t acquired = int64_t(after.at("nr_foll_pin_acquired")) - before.at("nr_foll_pin_acquired");
	const int64_t released = int64_t(after.at("nr_foll_pin_released")) - before.at("nr_foll_pin_released");

	std::printf("pinmatrix_fuzz: seed %llu, %ld calls (%ld succeeded), %d threads, %d forks; "
		    "FOLL_PIN acquired %lld, released %lld\n",
		    (unsigned long long)o.seed, calls_done.load(), calls_ok.load(), o.threads, o.forks,
		    (long long)acquired, (long long)released);
	int status = 0;
	if (acquired != released) {
		std::printf("FAIL: %lld pins not released\n", (long long)(acquired - released));
		status = 1;
	}
	if (const auto c = kernel_complaints(); !c.empty()) {
		std::printf("FAIL: kernel log: %s\n", c.c_str());
		status = 1;
	}
	std::printf("%d passed, %d failed\n", status ? 0 : 1, status ? 1 : 0);
	return status;
}
