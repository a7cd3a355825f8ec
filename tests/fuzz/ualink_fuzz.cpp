// SPDX-License-Identifier: GPL-2.0
// A seeded random fuzzer for the UALink reference model (kmod/ualink_sim, a
// DRM driver standing in for amdgpu), run inside a guest. It drives every
// ioctl the model has on its render and primary nodes: the UALink handle
// ioctl (export/import), GEM create/close/flink/open, PRIME handle<->fd, the
// model's mmap/info/evict/remote-access/stats, plus mmap of the DRM fd and of
// dma-bufs, with bad pointers, read-only and unmapped arguments, zero, huge
// and unaligned sizes, nonzero flags and pad, forged and stale 128-bit
// handles, stale and double-closed GEM handles, wrong struct sizes and
// directions, the wrong device (export on one accelerator, import on
// another, a GEM handle of another file), files closed while what they
// exported is imported, node resets and offline transitions, threads
// sharing DRM files, and forks that exit (or are killed) holding objects.
//
// Oracles while it runs: refused input stays refused (gem_create's bad
// arguments, unknown UALink flags), data written through the exporter's
// mapping reads back through a peer's import and the other way round, a
// dma-buf's size is its object's. Afterwards: no oops, WARN, BUG, KASAN,
// UBSAN or lockdep report in the kernel log, the model's object counts back
// to where they were, FOLL_PIN balanced, and the module unloads (nothing it
// handed out is still held) when the fuzzer loaded it.
//
// Usage: ualink_fuzz [--seed N] [--calls N (operations)] [--threads 1-64] [--forks N]
//                    [--fault-bits 0|1] [--plant 0|1]
// --fault-bits 1 also toggles the model's fault bits (known deviations) at
// random; the refusal oracles that a bit can turn off are then not applied.
// --plant 1 plants UALINK_SIM_PLANT_DANGLING_IMPORT for the whole run: a
// memory-safety bug no case sees, which this fuzzer must find under KASAN
// (tests/vm/debug-kernel.sh proves it does).
// Loads the model when it is absent: `modprobe drm_shmem_helper`, then
// $UALINK_SIM_MODULE or $PINMATRIX_MODULES/ualink_sim/ualink_sim.ko (set by
// `pinmatrix vm`). Exit 0 clean, 1 a finding, 2 bad usage or setup.

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <linux/dma-buf.h>

#include "kernel_info.hpp"
#include "kernel_log.hpp"
#include "ualink/ualink_device.hpp"

namespace fs = std::filesystem;
using pinmatrix::ualink::handle128;

namespace {

struct options {
	uint64_t seed = 1;
	long calls = 20000;
	int threads = 4;
	int forks = 8;
	bool fault_bits = false;
	unsigned plant = UALINK_SIM_PLANT_NONE;
};

constexpr uint64_t page = 4096;

// What each operation did, merged from all threads for the summary.
enum op : unsigned {
	op_create, op_close, op_export, op_import, op_prime_export, op_prime_import, op_close_dmabuf,
	op_mmap, op_munmap, op_info, op_evict, op_remote_access, op_stats, op_roundtrip, op_raw,
	op_reopen, op_flink, op_node_chaos, op_observe, op_count
};
const char *const op_names[op_count] = {
	"gem_create", "gem_close", "ualink_export", "ualink_import", "prime_handle_to_fd",
	"prime_fd_to_handle", "close_dmabuf", "mmap", "munmap", "gem_info", "gem_evict",
	"remote_access", "pod_stats", "roundtrip", "raw_ioctl", "reopen_file", "flink_open",
	"node_chaos", "observe"};

struct tally {
	long calls[op_count] = {};
	long ok[op_count] = {};
	std::map<int, long> errnos[op_count];
	// What went wrong, by kind: how often, and the first instance.
	std::map<std::string, std::pair<long, std::string>> findings;

	void add(const std::string &kind, const std::string &detail, long n = 1)
	{
		auto &f = findings[kind];
		if (!f.first)
			f.second = detail;
		f.first += n;
	}

	void merge(const tally &t)
	{
		for (unsigned i = 0; i < op_count; i++) {
			calls[i] += t.calls[i];
			ok[i] += t.ok[i];
			for (const auto &[e, n] : t.errnos[i])
				errnos[i][e] += n;
		}
		for (const auto &[kind, f] : t.findings)
			add(kind, f.second, f.first);
	}
};

// One simulated accelerator: its id and its render and primary nodes.
struct accel_nodes {
	uint32_t id = 0;
	std::string render, card;
	fs::path sysfs;		// <dev>/ualink
};

// Addresses worth passing: mapped, read-only, inaccessible (kept reserved so
// that no thread stack lands there), NULL, kernel, unaligned, the last page.
struct arena {
	char *rw, *ro, *hole;
	size_t len = 64 * page;

	arena()
	{
		// A guard page after rw: what the kernel writes through a pointer
		// near its end faults there instead of landing on our heap.
		rw = map(PROT_READ | PROT_WRITE, MAP_POPULATE, page);
		mprotect(rw + len, page, PROT_NONE);
		ro = map(PROT_READ, 0);
		hole = map(PROT_NONE, 0);
	}
	~arena()
	{
		munmap(rw, len + page);
		munmap(ro, len);
		munmap(hole, len);
	}
	arena(const arena &) = delete;
	arena &operator=(const arena &) = delete;

	char *map(int prot, int flags, size_t extra = 0)
	{
		void *p = mmap(nullptr, len + extra, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
		if (p == MAP_FAILED) {
			std::perror("ualink_fuzz: mmap");
			std::exit(2);
		}
		return static_cast<char *>(p);
	}

	// A user pointer for data the kernel reads or writes.
	uint64_t bad_pointer(std::mt19937_64 &g) const
	{
		switch (g() % 7) {
		case 0: return 0;
		case 1: return uint64_t(ro) + (g() % 64) * page;
		case 2: return uint64_t(hole) + (g() % 64) * page;
		case 3: return 0xffff800000000000ULL + (g() % 1024) * page;
		case 4: return 0x7ffffffff000ULL;
		case 5: return uint64_t(rw) + len - 8;	// runs into the guard page
		default: return g();
		}
	}
};

struct fuzz_env {
	options opt;
	std::vector<accel_nodes> accels;
	std::vector<int> shared_render;		// one file per accelerator, all threads
	std::vector<int> shared_card;
	arena a;

	std::mutex handles_lock;
	std::deque<handle128> handles;		// the last 512 exported: live or stale
	// Held while a thread takes an accelerator offline and checks that
	// nothing of it is left: no other state change in between.
	std::mutex offline_lock[64];

	void remember(const handle128 &h)
	{
		std::lock_guard<std::mutex> l(handles_lock);
		handles.push_back(h);
		if (handles.size() > 512)
			handles.pop_front();
	}
	// Half the time one of the last few: those are likely still live.
	bool some_handle(std::mt19937_64 &g, handle128 &out)
	{
		std::lock_guard<std::mutex> l(handles_lock);
		if (handles.empty())
			return false;
		const size_t n = handles.size();
		out = handles[g() % 2 ? n - 1 - g() % std::min<size_t>(n, 8) : g() % n];
		return true;
	}
};

// The handle pool's lock is held across fork() so that a child never
// inherits it taken by a thread that does not exist there.
fuzz_env *forking_env;

void lock_for_fork()
{
	forking_env->handles_lock.lock();
}

void unlock_after_fork()
{
	forking_env->handles_lock.unlock();
}

int sys_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

// A valid argument on a read-only page: DRM copies it in, the handler
// acts, and only the copy-out fails (EFAULT after the fact).
template <typename T> int ioctl_readonly(int fd, unsigned long cmd, const T &arg)
{
	void *p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	std::memcpy(p, &arg, sizeof(arg));
	mprotect(p, page, PROT_READ);
	const int ret = sys_ioctl(fd, cmd, p);
	munmap(p, page);
	return ret;
}

void write_knob(const fs::path &p, const std::string &text)
{
	const int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	(void)!::write(fd, text.data(), text.size());
	close(fd);
}

// The bits the fuzzer turns on: all but those whose bug the kernel itself
// reports, which the fuzzer would read as a finding of its own:
// - a CPU mapping of remote memory, which has no pages (touching it, as the
//   fuzzer does every mapping, is SIGBUS by design);
// - a local import that makes a new dma-buf of the BO: PRIME import of that
//   second dma-buf on the BO's own accelerator gives the BO back, whose
//   obj->dma_buf is its first one, and drm_gem_prime_fd_to_handle() WARNs
//   (WARN_ON(obj->dma_buf != dma_buf); vm.debug-kernel on 6.1 met it).
//   The case import-on-exporter catches the bit (matrix/promises.cpp).
constexpr uint64_t fuzzed_faults = UALINK_SIM_FAULT_ALL & ~UALINK_SIM_FAULT_REMOTE_CPU_MAPPABLE &
				   ~UALINK_SIM_FAULT_LOCAL_IMPORT_NEW_DMABUF;

void set_faults(uint64_t mask)
{
	char buf[24];
	std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(mask));
	write_knob("/sys/kernel/debug/" UALINK_SIM_DRIVER_NAME "/faults", buf);
}

bool is_dmabuf(int fd)
{
	char target[64] = {};
	const std::string link = "/proc/self/fd/" + std::to_string(fd);
	// dma-bufs live on their own pseudo file system: "/dmabuf:<name>".
	return readlink(link.c_str(), target, sizeof(target) - 1) > 0 &&
	       std::strncmp(target, "/dmabuf:", 8) == 0;
}

class worker {
public:
	worker(fuzz_env &env, uint64_t seed, tally &t, bool forked = false)
		: env_(env), g_(seed), t_(t), forked_(forked)
	{
	}
	worker(const worker &) = delete;
	worker &operator=(const worker &) = delete;
	~worker() { release_all(); }

	void run(long calls)
	{
		for (size_t i = 0; i < env_.accels.size(); i++)
			open_own(i);
		for (long i = 0; i < calls; i++)
			step();
	}

	// A forked child: objects of its own and on the inherited shared files,
	// a peer's import of its memory, a PRIME export and a mapping.
	void hold_some()
	{
		for (size_t i = 0; i < env_.accels.size(); i++)
			open_own(i);
		for (int i = 0; i < 4; i++)
			roundtrip(true);
		for (int i = 0; i < 24; i++)
			step();
	}

	// Whatever this thread still holds, dropped as a program would.
	void release_all()
	{
		for (const auto &m : maps_)
			munmap(m.p, m.len);
		maps_.clear();
		for (const auto &d : dmabufs_)
			close(d.fd);
		dmabufs_.clear();
		for (const auto &f : own_)
			close(f.fd);
		own_.clear();
		gems_.clear();
	}

private:
	struct file {
		int fd;
		size_t accel;
		bool card;
		bool own;	// only this thread changes its handles
	};
	struct gem {
		int fd;
		uint32_t handle;
		uint64_t size;
		size_t accel;
		bool remote;
		bool own;
	};
	struct dmabuf {
		int fd;
		uint64_t size;
	};
	struct mapping {
		void *p;
		size_t len;
	};

	fuzz_env &env_;
	std::mt19937_64 g_;
	tally &t_;
	bool forked_;	// a child: no state changes (the offline locks are the parent's)
	std::vector<file> own_;
	std::vector<gem> gems_;		// live as far as this thread knows
	std::vector<gem> stale_;	// closed: their numbers come back as stale handles
	std::vector<dmabuf> dmabufs_;
	std::vector<mapping> maps_;

	bool one_in(unsigned n) { return g_() % n == 0; }
	template <typename T> T &pick(std::vector<T> &v) { return v[g_() % v.size()]; }

	int count(op o, int ret)
	{
		t_.calls[o]++;
		if (ret >= 0)
			t_.ok[o]++;
		else
			t_.errnos[o][-ret]++;
		return ret;
	}
	void finding(const std::string &kind, const std::string &detail = "")
	{
		t_.add(kind, detail);
	}

	// The argument itself: the real struct, or a pointer the kernel must
	// refuse to copy (read-only: copy-in works, the copy-out fails).
	template <typename T> void *arg(T &real, bool *is_real)
	{
		*is_real = !one_in(24);
		return *is_real ? static_cast<void *>(&real)
				: reinterpret_cast<void *>(env_.a.bad_pointer(g_));
	}

	void open_own(size_t accel)
	{
		const bool card = !env_.accels[accel].card.empty() && one_in(3);
		const std::string &node = card ? env_.accels[accel].card : env_.accels[accel].render;
		const int fd = ::open(node.c_str(), O_RDWR | O_CLOEXEC);
		if (fd >= 0)
			own_.push_back({fd, accel, card, true});
	}

	// Mostly this thread's files; the files all threads share otherwise.
	file pick_file()
	{
		if (!own_.empty() && !one_in(3))
			return pick(own_);
		const size_t i = g_() % env_.accels.size();
		if (one_in(3) && env_.shared_card[i] >= 0)
			return {env_.shared_card[i], i, true, false};
		return {env_.shared_render[i], i, false, false};
	}

	// A GEM handle: one this thread holds (in its file, or named in the
	// wrong file), a closed one, or a made-up number.
	uint32_t pick_handle()
	{
		const unsigned k = g_() % 10;
		if (k < 6 && !gems_.empty()) {
			const gem &x = pick(gems_);
			return x.handle;
		}
		if (k < 8 && !stale_.empty())
			return pick(stale_).handle;
		switch (g_() % 4) {
		case 0: return 0;
		case 1: return ~0U;
		default: return uint32_t(1 + g_() % 64);
		}
	}

	uint64_t pick_size()
	{
		switch (g_() % 12) {
		case 0: return 0;
		case 1: return ~0ULL;
		case 2: return UALINK_SIM_BO_MAX_SIZE + 1;
		case 3: return UALINK_SIM_BO_MAX_SIZE;
		case 4: return 1 + g_() % (3 * page);	// rounds up
		case 5: return 1ULL << (g_() % 64);
		default: return page << (g_() % 5);	// 4 KiB - 64 KiB
		}
	}

	uint32_t pick_domains()
	{
		switch (g_() % 8) {
		case 0: return 0;
		case 1: return UALINK_SIM_DOMAIN_GTT;
		case 2: return UALINK_SIM_DOMAIN_GTT | UALINK_SIM_DOMAIN_VRAM;
		case 3: return uint32_t(g_());
		default: return UALINK_SIM_DOMAIN_VRAM;
		}
	}

	// A handle to import: one that was exported (live or stale), or forged
	// from one: a bit flipped in either half, another accelerator's id,
	// an id past the pod or the id space, all zero, all ones.
	handle128 pick_import_handle()
	{
		handle128 h;
		const bool known = env_.some_handle(g_, h);
		const unsigned k = known ? g_() % 12 : 6 + g_() % 6;
		switch (k) {
		case 6: h.hi ^= 1ULL << (g_() % 64); break;
		case 7: h.lo ^= 1ULL << (AMDGPU_UALINK_HANDLE_ACCID_BITS + g_() % 54); break;
		case 8:
			h.lo = (h.lo & ~AMDGPU_UALINK_HANDLE_ACCID_MASK_U64) |
			       (g_() % 2 ? g_() % env_.accels.size() : env_.accels.size() + g_() % 1024);
			break;
		case 9: h = {0, 0}; break;
		case 10: h = {~0ULL, ~0ULL}; break;
		case 11: h = {g_(), g_()}; break;
		default: break;	// as exported
		}
		return h;
	}

	// PRIME import of a dma-buf this file already holds gives the same
	// handle again: one record per (file, handle).
	void keep_gem(const gem &x)
	{
		for (auto &y : gems_)
			if (y.fd == x.fd && y.handle == x.handle) {
				y.size = y.size ? y.size : x.size;
				return;
			}
		if (gems_.size() >= 48)
			close_gem(0, true);
		gems_.push_back(x);
	}

	// A handle closed, by whichever path: no record of it stays live.
	void closed(int fd, uint32_t handle)
	{
		for (size_t k = gems_.size(); k-- > 0;)
			if (gems_[k].fd == fd && gems_[k].handle == handle)
				forget(k);
	}

	void keep_dmabuf(const dmabuf &d)
	{
		if (dmabufs_.size() >= 48) {
			close(dmabufs_.front().fd);
			dmabufs_.erase(dmabufs_.begin());
		}
		dmabufs_.push_back(d);
	}

	void forget(size_t i)
	{
		if (stale_.size() >= 64)
			stale_.erase(stale_.begin());
		stale_.push_back(gems_[i]);
		gems_.erase(gems_.begin() + long(i));
	}

	int close_gem(size_t i, bool quiet = false)
	{
		drm_gem_close c{};
		const int fd = gems_[i].fd;
		c.handle = gems_[i].handle;
		const int ret = sys_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c);
		forget(i);
		closed(fd, c.handle);
		return quiet ? ret : count(op_close, ret);
	}

	void step()
	{
		switch (g_() % 40) {
		case 0: case 1: case 2: case 3: return create();
		case 4: case 5: return gem_close();
		case 6: case 7: case 8: case 9: return do_export();
		case 10: case 11: case 12: case 13: return do_import();
		case 14: case 15: return prime_export();
		case 16: case 17: return prime_import();
		case 18: return close_dmabuf();
		case 19: case 20: return do_mmap();
		case 21: return do_munmap();
		case 22: return info();
		case 23: return evict();
		case 24: case 25: return remote_access();
		case 26: return stats();
		case 27: case 28: case 29: return roundtrip(false);
		case 30: case 31: case 32: return raw();
		case 33: return reopen();
		case 34: case 35: return flink_open();
		case 36: return node_chaos();
		case 37: case 38: return observe();
		default: return dmabuf_ops();
		}
	}

	void create()
	{
		drm_ualink_sim_gem_create c{};
		c.size = pick_size();
		c.domains = pick_domains();
		c.flags = one_in(12) ? uint32_t(g_() | 1) : 0;
		c.pad = one_in(12) ? uint32_t(g_() | 1) : 0;
		// Large accepted sizes (up to 256 MiB) are created and closed at
		// once in a file no other thread reaches: an export or mmap would
		// pin them in the guest's ~470 MiB outside ZONE_MOVABLE (shmem BOs
		// are not movable) and the OOM killer would end the run.
		const bool big = c.size > (1 << 20) && c.size <= UALINK_SIM_BO_MAX_SIZE;
		if (big && own_.empty())
			c.size = page;
		const file f = big && !own_.empty() ? pick(own_) : pick_file();
		bool real;
		void *p = arg(c, &real);
		const int ret = count(op_create, sys_ioctl(f.fd, DRM_IOCTL_UALINK_SIM_GEM_CREATE, p));
		const bool bad = !c.size || c.size > UALINK_SIM_BO_MAX_SIZE || c.flags || c.pad ||
				 !c.domains ||
				 (c.domains & ~(UALINK_SIM_DOMAIN_GTT | UALINK_SIM_DOMAIN_VRAM));
		if (real && bad && ret != -EINVAL)
			finding("gem_create did not refuse bad arguments with EINVAL", "size " +
				std::to_string(c.size) + ", domains " + std::to_string(c.domains) +
				", flags " + std::to_string(c.flags) + ", pad " + std::to_string(c.pad) +
				": " + std::to_string(ret));
		if (!ret && real) {
			keep_gem({f.fd, c.handle, (c.size + page - 1) & ~(page - 1), f.accel, false, f.own});
			if (big && f.own)
				close_gem(gems_.size() - 1);
		}
	}

	void gem_close()
	{
		if (!gems_.empty() && !one_in(4))
			return (void)close_gem(g_() % gems_.size());
		// Closed before, made up, or another file's.
		drm_gem_close c{};
		c.handle = pick_handle();
		c.pad = one_in(8) ? uint32_t(g_()) : 0;
		const file f = pick_file();
		if (!count(op_close, sys_ioctl(f.fd, DRM_IOCTL_GEM_CLOSE, &c)))
			closed(f.fd, c.handle);
	}

	int export_gem(const file &f, uint32_t handle, uint32_t flags)
	{
		drm_amdgpu_ualink_handle u;
		std::memset(&u, 0, sizeof(u));
		u.in.op = DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT;
		u.in.flags = flags;
		u.in.gem_handle = handle;
		// Stale bytes in the rest of the union must not matter.
		if (one_in(4)) {
			u.in.import_ualink_handle[0] |= g_() << 32;
			u.in.import_ualink_handle[1] = g_();
		}
		const int ret = sys_ioctl(f.fd, DRM_IOCTL_AMDGPU_UALINK_HANDLE, &u);
		if (!ret)
			env_.remember({u.out.export_ualink_handle[0], u.out.export_ualink_handle[1]});
		return ret;
	}

	void do_export()
	{
		const file f = pick_file();
		uint32_t flags = one_in(10) ? uint32_t(g_() | 1) : 0;
		if (one_in(12)) {
			// An unknown op, or the whole argument garbage or unreadable.
			drm_amdgpu_ualink_handle u;
			for (auto &w : u.in.import_ualink_handle)
				w = g_();
			u.in.op = one_in(2) ? uint32_t(g_()) : 2 + uint32_t(g_() % 4);
			u.in.flags = flags;
			bool real;
			void *p = arg(u, &real);
			const int ret = count(op_export, sys_ioctl(f.fd, DRM_IOCTL_AMDGPU_UALINK_HANDLE, p));
			if (real && ret == 0 && u.in.op > 1)
				finding("the UALink ioctl accepted an unknown op", std::to_string(u.in.op));
			return;
		}
		const int ret = count(op_export, export_gem(f, pick_handle(), flags));
		if (flags && ret == 0 && !env_.opt.fault_bits)
			finding("UALink export accepted flags", std::to_string(flags));
	}

	void do_import()
	{
		const file f = pick_file();
		drm_amdgpu_ualink_handle u;
		std::memset(&u, 0, sizeof(u));
		const handle128 h = pick_import_handle();
		u.in.op = DRM_AMDGPU_UALINK_HANDLE_OP_IMPORT;
		u.in.flags = one_in(10) ? uint32_t(g_() | 1) : 0;
		u.in.import_ualink_handle[0] = h.lo;
		u.in.import_ualink_handle[1] = h.hi;
		const uint32_t flags = u.in.flags;
		if (one_in(16))
			return (void)count(op_import, ioctl_readonly(f.fd, DRM_IOCTL_AMDGPU_UALINK_HANDLE, u));
		bool real;
		void *p = arg(u, &real);
		const int ret = count(op_import, sys_ioctl(f.fd, DRM_IOCTL_AMDGPU_UALINK_HANDLE, p));
		if (flags && ret == 0 && !env_.opt.fault_bits)
			finding("UALink import accepted flags", std::to_string(flags));
		if (ret || !real)
			return;
		const int fd = int(u.out.import_dmabuf_handle);
		const off_t size = lseek(fd, 0, SEEK_END);
		if (size <= 0) {
			finding("an import returned no sized dma-buf", "fd " + std::to_string(fd));
			return;
		}
		keep_dmabuf({fd, uint64_t(size)});
	}

	void prime_export()
	{
		const file f = pick_file();
		drm_prime_handle ph{};
		size_t from = gems_.size();
		if (!gems_.empty() && !one_in(4)) {
			from = g_() % gems_.size();
			ph.handle = gems_[from].handle;
		} else {
			ph.handle = pick_handle();
		}
		ph.flags = one_in(8) ? uint32_t(g_()) : DRM_CLOEXEC | (one_in(2) ? DRM_RDWR : 0);
		ph.fd = one_in(8) ? int(g_()) : -1;
		if (one_in(16))
			return (void)count(op_prime_export, ioctl_readonly(f.fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, ph));
		bool real;
		void *p = arg(ph, &real);
		const int ret = count(op_prime_export, sys_ioctl(f.fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, p));
		if (!ret && real) {
			const off_t size = lseek(ph.fd, 0, SEEK_END);
			// In a shared file another thread may have reused the number.
			const bool known = from < gems_.size() && gems_[from].own && gems_[from].fd == f.fd &&
					   gems_[from].size;
			if (known && uint64_t(size) != gems_[from].size)
				finding("a PRIME export's dma-buf is not its object's size",
					std::to_string(gems_[from].size) + " bytes -> " + std::to_string(size));
			keep_dmabuf({ph.fd, uint64_t(size > 0 ? size : 0)});
		}
	}

	void prime_import()
	{
		const file f = pick_file();
		drm_prime_handle ph{};
		if (!dmabufs_.empty() && !one_in(5))
			ph.fd = pick(dmabufs_).fd;
		else
			// Not a dma-buf: a DRM file, stdin, a closed or absurd number.
			ph.fd = one_in(2) ? f.fd : int(g_() % 3 ? g_() % 1024 : g_());
		ph.flags = one_in(8) ? uint32_t(g_()) : 0;
		bool real;
		void *p = arg(ph, &real);
		const int ret = count(op_prime_import, sys_ioctl(f.fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, p));
		if (!ret && real)
			keep_gem({f.fd, ph.handle, 0, f.accel, true, f.own});
	}

	void close_dmabuf()
	{
		if (dmabufs_.empty())
			return;
		const size_t i = g_() % dmabufs_.size();
		count(op_close_dmabuf, close(dmabufs_[i].fd) ? -errno : 0);
		dmabufs_.erase(dmabufs_.begin() + long(i));
	}

	size_t pick_length(uint64_t size)
	{
		switch (g_() % 8) {
		case 0: return 0;
		case 1: return size + page;
		case 2: return size_t(1) << 40;
		case 3: return 1 + g_() % page;
		default: return size ? size_t(size) : page;
		}
	}

	void touch(char *p, size_t len, int prot)
	{
		if (!(prot & PROT_READ))
			return;
		for (size_t off = 0; off < len; off += page * (1 + g_() % 4)) {
			if (prot & PROT_WRITE)
				p[off] = char(off);
			else
				(void)*static_cast<volatile char *>(p + off);
		}
	}

	// The model's GEM_MMAP offset on a DRM file, or a dma-buf itself.
	void do_mmap()
	{
		int fd;
		uint64_t size = 0;
		off_t offset = 0;
		if (one_in(2) || dmabufs_.empty()) {
			const file f = pick_file();
			drm_ualink_sim_gem_mmap m{};
			m.handle = pick_handle();
			m.pad = one_in(10) ? uint32_t(g_() | 1) : 0;
			for (const auto &x : gems_)
				if (x.own && x.fd == f.fd && x.handle == m.handle)
					size = x.size;
			bool real;
			void *p = arg(m, &real);
			const int ret = count(op_mmap, sys_ioctl(f.fd, DRM_IOCTL_UALINK_SIM_GEM_MMAP, p));
			if (real && m.pad && ret == 0 && !env_.opt.fault_bits)
				finding("GEM_MMAP accepted nonzero pad", std::to_string(m.pad));
			if (ret || !real)
				return;
			fd = f.fd;
			offset = off_t(m.offset);
			if (one_in(8))
				offset += off_t(one_in(2) ? page : 1);	// off the object, unaligned
		} else {
			const dmabuf &d = pick(dmabufs_);
			fd = d.fd;
			size = d.size;
			if (one_in(8))
				offset = off_t(page * (1 + g_() % 4));
		}
		const size_t len = pick_length(size);
		const int prots[] = {PROT_READ | PROT_WRITE, PROT_READ, PROT_NONE, PROT_READ | PROT_EXEC};
		const int prot = prots[g_() % 4];
		// MAP_PRIVATE of this VM_PFNMAP memory must be refused (a COW
		// mapping would BUG in vmf_insert_pfn_prot()).
		const int flags = one_in(6) ? MAP_PRIVATE : MAP_SHARED;
		void *p = mmap(nullptr, len, prot, flags, fd, offset);
		count(op_mmap, p == MAP_FAILED ? -errno : 0);
		if (p == MAP_FAILED)
			return;
		if (flags == MAP_PRIVATE && (prot & PROT_WRITE))
			finding("a private writable mapping of a BO was allowed");
		// Only what the object holds: beyond it is SIGBUS by design.
		if (size && offset == 0 && len <= size)
			touch(static_cast<char *>(p), len, prot);
		if (maps_.size() >= 16) {
			munmap(maps_.front().p, maps_.front().len);
			maps_.erase(maps_.begin());
		}
		maps_.push_back({p, len});
	}

	void do_munmap()
	{
		if (maps_.empty())
			return;
		const size_t i = g_() % maps_.size();
		count(op_munmap, munmap(maps_[i].p, maps_[i].len) ? -errno : 0);
		maps_.erase(maps_.begin() + long(i));
	}

	void info()
	{
		const file f = pick_file();
		drm_ualink_sim_gem_info i{};
		std::memset(&i, 0xa5, sizeof(i));
		i.handle = pick_handle();
		bool real;
		void *p = arg(i, &real);
		count(op_info, sys_ioctl(f.fd, DRM_IOCTL_UALINK_SIM_GEM_INFO, p));
	}

	void evict()
	{
		const file f = pick_file();
		drm_ualink_sim_gem_evict e{};
		e.handle = pick_handle();
		e.pad = one_in(10) ? uint32_t(g_() | 1) : 0;
		bool real;
		void *p = arg(e, &real);
		const int ret = count(op_evict, sys_ioctl(f.fd, DRM_IOCTL_UALINK_SIM_GEM_EVICT, p));
		if (real && e.pad && ret == 0 && !env_.opt.fault_bits)
			finding("GEM_EVICT accepted nonzero pad", std::to_string(e.pad));
	}

	void remote_access()
	{
		file f = pick_file();
		drm_ualink_sim_remote_access ra{};
		ra.handle = pick_handle();
		ra.op = one_in(8) ? uint32_t(g_()) : uint32_t(g_() % 2);
		switch (g_() % 6) {
		case 0: ra.offset = g_(); break;
		case 1: ra.offset = ~0ULL - g_() % page; break;
		default: ra.offset = g_() % (3 * page);
		}
		switch (g_() % 6) {
		case 0: ra.size = 0; break;
		case 1: ra.size = UALINK_SIM_ACCESS_MAX + 1; break;
		case 2: ra.size = g_(); break;
		default: ra.size = 1 + g_() % (2 * page);
		}
		// Mostly an imported object, in the file that holds it, often
		// with a range inside it.
		for (int tries = 0; tries < 4 && !gems_.empty() && !one_in(3); tries++) {
			const gem &x = pick(gems_);
			if (!x.remote)
				continue;
			f.fd = x.fd;
			ra.handle = x.handle;
			if (x.size && !one_in(3)) {
				ra.offset = g_() % x.size;
				ra.size = 1 + g_() % (x.size - ra.offset);
			}
			break;
		}
		// The kernel copies at most ACCESS_MAX: the good buffer is big enough.
		static thread_local std::vector<char> good(UALINK_SIM_ACCESS_MAX);
		ra.data = one_in(3) ? env_.a.bad_pointer(g_) : uint64_t(good.data());
		bool real;
		void *p = arg(ra, &real);
		count(op_remote_access, sys_ioctl(f.fd, DRM_IOCTL_UALINK_SIM_REMOTE_ACCESS, p));
	}

	void stats()
	{
		drm_ualink_sim_pod_stats s{};
		bool real;
		void *p = arg(s, &real);
		count(op_stats, sys_ioctl(pick_file().fd, DRM_IOCTL_UALINK_SIM_POD_STATS, p));
	}

	// The data oracle: an exporter's BO in this thread's file, imported on
	// a peer; a store through the mapping is seen by the peer's load and the
	// peer's store by the mapping. Revocation (a node reset by another
	// thread) may end it early with an errno, never with other data.
	void roundtrip(bool hold)
	{
		if (env_.accels.size() < 2 || own_.size() < 2)
			return;
		const size_t ei = g_() % own_.size();
		size_t ii = g_() % own_.size();
		if (own_[ii].accel == own_[ei].accel)
			ii = (ii + 1) % own_.size();
		const file ex = own_[ei], im = own_[ii];
		if (ex.accel == im.accel)
			return;
		const uint64_t size = page << (g_() % 3);
		drm_ualink_sim_gem_create c{};
		c.size = size;
		c.domains = UALINK_SIM_DOMAIN_VRAM;
		int ret = sys_ioctl(ex.fd, DRM_IOCTL_UALINK_SIM_GEM_CREATE, &c);
		count(op_roundtrip, ret);
		if (ret) {
			finding("creating a small VRAM BO failed", strerror(-ret));
			return;
		}
		keep_gem({ex.fd, c.handle, size, ex.accel, false, true});
		drm_amdgpu_ualink_handle u;
		std::memset(&u, 0, sizeof(u));
		u.in.op = DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT;
		u.in.gem_handle = c.handle;
		if (count(op_roundtrip, sys_ioctl(ex.fd, DRM_IOCTL_AMDGPU_UALINK_HANDLE, &u)))
			return;	// the exporter is offline
		const handle128 h{u.out.export_ualink_handle[0], u.out.export_ualink_handle[1]};
		env_.remember(h);
		std::memset(&u, 0, sizeof(u));
		u.in.op = DRM_AMDGPU_UALINK_HANDLE_OP_IMPORT;
		u.in.import_ualink_handle[0] = h.lo;
		u.in.import_ualink_handle[1] = h.hi;
		if (count(op_roundtrip, sys_ioctl(im.fd, DRM_IOCTL_AMDGPU_UALINK_HANDLE, &u)))
			return;
		const int dfd = int(u.out.import_dmabuf_handle);
		keep_dmabuf({dfd, size});
		drm_prime_handle ph{};
		ph.fd = dfd;
		if (count(op_roundtrip, sys_ioctl(im.fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph)))
			return;
		keep_gem({im.fd, ph.handle, size, im.accel, true, true});

		drm_ualink_sim_gem_mmap m{};
		m.handle = c.handle;
		if (count(op_roundtrip, sys_ioctl(ex.fd, DRM_IOCTL_UALINK_SIM_GEM_MMAP, &m)))
			return;
		void *mp = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, ex.fd, off_t(m.offset));
		if (mp == MAP_FAILED) {
			finding("mmap of a live BO failed", strerror(errno));
			return;
		}
		auto *cpu = static_cast<unsigned char *>(mp);
		std::vector<unsigned char> want(size), got(size);
		for (auto &b : want)
			b = static_cast<unsigned char>(g_());
		std::memcpy(cpu, want.data(), size);
		drm_ualink_sim_remote_access ra{};
		ra.handle = ph.handle;
		ra.op = UALINK_SIM_ACCESS_READ;
		ra.size = size;
		ra.data = uint64_t(got.data());
		ret = count(op_roundtrip, sys_ioctl(im.fd, DRM_IOCTL_UALINK_SIM_REMOTE_ACCESS, &ra));
		if (!ret && got != want)
			finding("a peer's load did not see the exporter's store");
		for (auto &b : want)
			b = static_cast<unsigned char>(g_());
		ra.op = UALINK_SIM_ACCESS_WRITE;
		ra.data = uint64_t(want.data());
		ret = count(op_roundtrip, sys_ioctl(im.fd, DRM_IOCTL_UALINK_SIM_REMOTE_ACCESS, &ra));
		if (!ret && std::memcmp(cpu, want.data(), size))
			finding("the exporter's mapping did not see a peer's store");
		if (hold)
			maps_.push_back({mp, size});
		else
			munmap(mp, size);
		// Sometimes the exporter lets go while the import is live.
		if (one_in(3))
			for (size_t i = 0; i < gems_.size(); i++)
				if (gems_[i].fd == ex.fd && gems_[i].handle == c.handle) {
					close_gem(i, true);
					break;
				}
	}

	// Unknown numbers, the model's numbers with wrong sizes and
	// directions, NULL and unreadable arguments.
	void raw()
	{
		const file f = pick_file();
		static thread_local std::vector<char> buf(16384);
		for (auto &c : buf)
			c = char(g_());
		const unsigned nr = one_in(2) ? DRM_COMMAND_BASE + unsigned(g_() % 0x20)
					      : unsigned(g_() % 0x100);
		const unsigned dirs[] = {_IOC_NONE, _IOC_READ, _IOC_WRITE, _IOC_READ | _IOC_WRITE};
		unsigned size;
		switch (g_() % 5) {
		case 0: size = 0; break;
		case 1: size = unsigned(g_() % 64); break;
		case 2: size = _IOC_SIZEMASK; break;
		default: size = unsigned(8 * (g_() % 8));
		}
		const unsigned long cmd = one_in(10) ? (unsigned long)g_()
						     : _IOC(dirs[g_() % 4], DRM_IOCTL_BASE, nr, size);
		void *p = one_in(4) ? reinterpret_cast<void *>(env_.a.bad_pointer(g_)) : buf.data();
		count(op_raw, sys_ioctl(f.fd, cmd, p));
	}

	// Close one of this thread's files with whatever it holds: exports die,
	// their importers are revoked, imported dma-bufs outlive it.
	void reopen()
	{
		if (own_.empty())
			return;
		const size_t i = g_() % own_.size();
		const file f = own_[i];
		for (size_t k = gems_.size(); k-- > 0;)
			if (gems_[k].fd == f.fd)
				forget(k);
		count(op_reopen, close(f.fd) ? -errno : 0);
		own_.erase(own_.begin() + long(i));
		open_own(f.accel);
	}

	// Global names on primary nodes: a second handle to the same BO from
	// another file, so the last-handle rule counts across files.
	file pick_card_file()
	{
		for (int tries = 0; tries < 4; tries++) {
			const file f = pick_file();
			if (f.card)
				return f;
		}
		return pick_file();
	}

	void flink_open()
	{
		const file f = pick_card_file();
		drm_gem_flink fl{};
		fl.handle = pick_handle();
		int ret = count(op_flink, sys_ioctl(f.fd, DRM_IOCTL_GEM_FLINK, &fl));
		drm_gem_open o{};
		o.name = ret ? uint32_t(g_() % 64) : fl.name;
		const file to = pick_card_file();
		bool real;
		void *p = arg(o, &real);
		ret = count(op_flink, sys_ioctl(to.fd, DRM_IOCTL_GEM_OPEN, p));
		if (!ret && real)
			keep_gem({to.fd, o.handle, o.size, to.accel, false, to.own});
	}

	// A node reset, an offline/online cycle, or (with --fault-bits) a
	// random set of the model's known deviations.
	void node_chaos()
	{
		const size_t i = g_() % env_.accels.size();
		const accel_nodes &n = env_.accels[i];
		switch (forked_ ? 0 : g_() % (env_.opt.fault_bits ? 4 : 3)) {
		case 0:
			write_knob(n.sysfs / "reset", "1");
			break;
		case 1: {
			std::lock_guard<std::mutex> l(env_.offline_lock[i]);
			write_knob(n.sysfs / "accel_state", one_in(2) ? "error" : "ready");
			if (!env_.opt.fault_bits)
				check_offline(i);
			write_knob(n.sysfs / "accel_state", "active");
			break;
		}
		case 2:
			write_knob(n.sysfs / "reset", one_in(2) ? "garbage" : "0");
			break;
		default:
			set_faults(one_in(3) ? 0 : g_() & fuzzed_faults);
		}
		count(op_node_chaos, 0);
	}

	// What the kernel shows of the pod outside the ioctls, read while the
	// other threads change it: debugfs (a show that follows a dangling
	// import oopses, with the pod's lock held), sysfs, and fdinfo and the
	// name of a dma-buf or DRM file of this process.
	void observe()
	{
		const accel_nodes &n = env_.accels[g_() % env_.accels.size()];
		std::string path;
		switch (g_() % 5) {
		case 0: path = "/sys/kernel/debug/" UALINK_SIM_DRIVER_NAME "/npa"; break;
		case 1: path = (n.sysfs / (one_in(2) ? "accel_state" : "vpod_active_accels")).string(); break;
		case 2: path = "/sys/kernel/debug/" UALINK_SIM_DRIVER_NAME "/faults"; break;
		default: {
			const int fd = !dmabufs_.empty() && one_in(2) ? dmabufs_[g_() % dmabufs_.size()].fd : pick_file().fd;
			char target[256];
			if (readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), target, sizeof(target)) < 0)
				return (void)count(op_observe, -errno);
			path = "/proc/self/fdinfo/" + std::to_string(fd);
		}
		}
		const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return (void)count(op_observe, -errno);
		char buf[4096];
		ssize_t got;
		while ((got = read(fd, buf, sizeof(buf))) > 0)
			;
		const int err = got < 0 ? -errno : 0;
		close(fd);
		count(op_observe, err);
	}

	// An accelerator just taken offline keeps nothing: its exports died
	// and its imports went, and none can have been made since. One that
	// raced with the state change (checked it before, registered after
	// the cleanup) would still be here.
	void check_offline(size_t i)
	{
		const uint32_t id = env_.accels[i].id;
		FILE *npa = std::fopen("/sys/kernel/debug/" UALINK_SIM_DRIVER_NAME "/npa", "re");
		char line[256];
		while (npa && std::fgets(line, sizeof(line), npa)) {
			unsigned imp = 0, exp = 0;
			if (std::sscanf(line, "importer %u exporter %u", &imp, &exp) == 2 && (imp == id || exp == id))
				finding("an accelerator taken offline is still in an import (npa)",
					"accelerator " + std::to_string(id) + ": " + std::strtok(line, "\n"));
		}
		if (npa)
			std::fclose(npa);
		for (uint32_t h = 1; h <= 64; h++) {
			drm_ualink_sim_gem_info info{};
			info.handle = h;
			if (!sys_ioctl(env_.shared_render[i], DRM_IOCTL_UALINK_SIM_GEM_INFO, &info) &&
			    info.kind == UALINK_SIM_GEM_KIND_BO && info.exported)
				finding("a BO of an accelerator taken offline is still exported",
					"accelerator " + std::to_string(id) + ", BO " + std::to_string(h));
		}
	}

	// The dma-buf file itself: sync, read, seek, and its size.
	void dmabuf_ops()
	{
		if (dmabufs_.empty())
			return create();
		const dmabuf &d = pick(dmabufs_);
		dma_buf_sync s{};
		s.flags = one_in(4) ? g_() : (one_in(2) ? DMA_BUF_SYNC_START : DMA_BUF_SYNC_END) |
						     DMA_BUF_SYNC_RW;
		count(op_raw, sys_ioctl(d.fd, DMA_BUF_IOCTL_SYNC, &s));
		char c;
		count(op_raw, read(d.fd, &c, 1) < 0 ? -errno : 0);
		const off_t size = lseek(d.fd, 0, SEEK_END);
		if (size >= 0 && d.size && uint64_t(size) != d.size)
			finding("a dma-buf's size changed", std::to_string(d.size) + " -> " + std::to_string(size));
	}
};

// Children that take objects and then exit, or are killed, holding them.
// A child prints its findings and reports how many in its ready byte.
void fork_holders(fuzz_env &env, int forks, uint64_t seed, tally &total)
{
	for (int i = 0; i < forks; i++) {
		int ready[2];
		if (pipe(ready))
			return;
		const pid_t pid = fork();
		if (pid == 0) {
			// A fuzzer that dies must not leave holders paused forever.
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(ready[0]);
			tally t;
			worker w(env, seed + uint64_t(i), t, true);
			w.hold_some();
			for (const auto &[kind, f] : t.findings)
				std::fprintf(stderr, "ualink_fuzz: holder %d: %s: %ld time(s); first: %s\n", i,
					     kind.c_str(), f.first, f.second.c_str());
			const unsigned char x = static_cast<unsigned char>(std::min<size_t>(t.findings.size(), 255));
			if (write(ready[1], &x, 1) != 1)
				_exit(2);
			if (i % 2)
				_exit(0);	// exit with all of it open
			for (;;)
				pause();	// until SIGKILL, holding it
		}
		close(ready[1]);
		unsigned char x = 0;
		if (read(ready[0], &x, 1) != 1)
			total.add("a forked holder died before holding anything", "holder " + std::to_string(i));
		else if (x)
			total.add("a forked holder had findings (printed above)", "holder " + std::to_string(i));
		close(ready[0]);
		if (i % 2 == 0)
			kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
	}
}

std::string module_path()
{
	if (const char *p = std::getenv("UALINK_SIM_MODULE"))
		return p;
	if (const char *d = std::getenv("PINMATRIX_MODULES"))
		return std::string(d) + "/ualink_sim/ualink_sim.ko";
	return {};
}

// Loads the model if it is absent; true when this process loaded it.
bool load_model(bool *loaded_here)
{
	*loaded_here = false;
	if (fs::exists("/sys/module/ualink_sim"))
		return true;
	const std::string ko = module_path();
	if (ko.empty()) {
		std::fprintf(stderr, "ualink_fuzz: ualink_sim is not loaded and neither $UALINK_SIM_MODULE "
				     "nor $PINMATRIX_MODULES names it\n");
		return false;
	}
	if (system("modprobe drm_shmem_helper")) {
		std::fprintf(stderr, "ualink_fuzz: modprobe drm_shmem_helper failed\n");
		return false;
	}
	const int fd = ::open(ko.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0 || syscall(SYS_finit_module, fd, "", 0)) {
		std::fprintf(stderr, "ualink_fuzz: cannot load %s: %s\n", ko.c_str(), strerror(errno));
		return false;
	}
	close(fd);
	*loaded_here = true;
	return true;
}

std::vector<accel_nodes> find_accels()
{
	std::vector<accel_nodes> out;
	// devtmpfs makes the nodes asynchronously after the load.
	for (int i = 0; i < 300; i++) {
		auto found = pinmatrix::ualink::discover();
		out.clear();
		for (const auto &a : found.accels) {
			if (!a.is_model())
				continue;
			accel_nodes n;
			n.id = a.id();
			n.render = a.node();
			n.sysfs = a.sysfs();
			std::error_code ec;
			for (const auto &e : fs::directory_iterator(a.sysfs().parent_path() / "drm", ec))
				if (e.path().filename().string().rfind("card", 0) == 0 &&
				    fs::exists("/dev/dri" / e.path().filename()))
					n.card = ("/dev/dri" / e.path().filename()).string();
			out.push_back(n);
		}
		if (out.size() >= 2 && std::all_of(out.begin(), out.end(), [](const auto &n) { return !n.card.empty(); }))
			break;
		usleep(10'000);
	}
	return out;
}

drm_ualink_sim_pod_stats pod_stats(const accel_nodes &n)
{
	drm_ualink_sim_pod_stats s{};
	const int fd = ::open(n.render.c_str(), O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		if (ioctl(fd, DRM_IOCTL_UALINK_SIM_POD_STATS, &s))
			s.bos = ~0ULL;
		close(fd);
	}
	return s;
}

std::string counts(const drm_ualink_sim_pod_stats &s)
{
	return "bos " + std::to_string(s.bos) + ", remote objects " + std::to_string(s.remote_objects) +
	       ", exports " + std::to_string(s.exports) + ", imports " + std::to_string(s.imports) +
	       ", pins " + std::to_string(s.pins);
}

bool same_counts(const drm_ualink_sim_pod_stats &a, const drm_ualink_sim_pod_stats &b)
{
	return a.bos == b.bos && a.remote_objects == b.remote_objects && a.exports == b.exports &&
	       a.imports == b.imports && a.pins == b.pins;
}

void set_plant(unsigned plant)
{
	write_knob("/sys/kernel/debug/" UALINK_SIM_DRIVER_NAME "/plant", std::to_string(plant));
}

// Every node active and reset, no fault bit: what deviations left behind
// (an export surviving its last handle) goes now.
void settle_pod(const std::vector<accel_nodes> &accels)
{
	set_faults(0);
	for (const auto &n : accels) {
		write_knob(n.sysfs / "accel_state", "active");
		write_knob(n.sysfs / "reset", "1");
	}
}

// Descriptors the kernel installed although the ioctl reported EFAULT (the
// fd goes in before DRM copies the result out): closed, and counted.
int close_unknown_dmabufs()
{
	int n = 0;
	std::vector<int> fds;
	std::error_code ec;
	for (const auto &e : fs::directory_iterator("/proc/self/fd", ec))
		fds.push_back(std::atoi(e.path().filename().c_str()));
	for (int fd : fds)
		if (fd > 2 && is_dmabuf(fd)) {
			close(fd);
			n++;
		}
	return n;
}

bool parse(int argc, char **argv, options &o)
{
	for (int i = 1; i < argc; i += 2) {
		const std::string k = argv[i];
		if (i + 1 >= argc) {
			std::fprintf(stderr, "ualink_fuzz: %s needs a value\n", k.c_str());
			return false;
		}
		char *end = nullptr;
		errno = 0;
		const long long v = std::strtoll(argv[i + 1], &end, 10);
		if (errno || !*argv[i + 1] || *end || v < 0) {
			std::fprintf(stderr, "ualink_fuzz: bad value '%s' for %s\n", argv[i + 1], k.c_str());
			return false;
		}
		if (k == "--seed")
			o.seed = uint64_t(v);
		else if (k == "--calls")
			o.calls = long(v);
		else if (k == "--threads" && v >= 1 && v <= 64)
			o.threads = int(v);
		else if (k == "--forks" && v <= 10000)
			o.forks = int(v);
		else if (k == "--fault-bits" && v <= 1)
			o.fault_bits = v;
		else if (k == "--plant" && v <= UALINK_SIM_PLANT_DANGLING_IMPORT)
			o.plant = unsigned(v);
		else {
			std::fprintf(stderr, "usage: %s [--seed N] [--calls N] [--threads 1-64] [--forks N] "
					     "[--fault-bits 0|1] [--plant 0|1]\n", argv[0]);
			return false;
		}
	}
	return true;
}

} // namespace

int main(int argc, char **argv)
{
	auto env = std::make_unique<fuzz_env>();
	options &o = env->opt;
	if (!parse(argc, argv, o))
		return 2;
	if (geteuid() != 0) {
		std::fprintf(stderr, "ualink_fuzz: runs as root in a guest (pinmatrix vm --guest-cmd)\n");
		return 2;
	}
	forking_env = env.get();
	pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
	bool loaded_here = false;
	if (!load_model(&loaded_here))
		return 2;
	env->accels = find_accels();
	// The model has at most 64 (USIM_MAX_ACCELS): one offline lock each.
	if (env->accels.size() > std::size(env->offline_lock))
		env->accels.resize(std::size(env->offline_lock));
	if (env->accels.size() < 2) {
		std::fprintf(stderr, "ualink_fuzz: %zu ualink_sim accelerators with render and primary "
				     "nodes (need 2)\n", env->accels.size());
		return 2;
	}
	for (const auto &n : env->accels) {
		env->shared_render.push_back(::open(n.render.c_str(), O_RDWR | O_CLOEXEC));
		env->shared_card.push_back(::open(n.card.c_str(), O_RDWR | O_CLOEXEC));
		if (env->shared_render.back() < 0 || env->shared_card.back() < 0) {
			std::fprintf(stderr, "ualink_fuzz: cannot open %s or %s: %s\n", n.render.c_str(),
				     n.card.c_str(), strerror(errno));
			return 2;
		}
	}

	settle_pod(env->accels);
	const auto baseline = pod_stats(env->accels[0]);
	set_plant(o.plant);
	// The kernel's reports from now on, in the one table of alarms.
	std::optional<pinmatrix::kernel_log_cursor> klog;
	try {
		klog.emplace();
	} catch (const std::system_error &e) {
		std::fprintf(stderr, "ualink_fuzz: %s\n", e.what());
		return 2;
	}
	const auto vm_before = pinmatrix::read_vmstat();

	tally total;
	const auto t0 = std::chrono::steady_clock::now();
	{
		std::vector<tally> tallies(size_t(o.threads));
		std::vector<std::thread> threads;
		for (int t = 0; t < o.threads; t++)
			threads.emplace_back([&, t] {
				worker w(*env, o.seed * 1000 + uint64_t(t), tallies[size_t(t)]);
				w.run(o.calls / o.threads);
			});
		fork_holders(*env, o.forks, o.seed * 1000 + 500, total);
		for (auto &t : threads)
			t.join();
		for (const auto &t : tallies)
			total.merge(t);
	}
	const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	for (size_t i = 0; i < env->accels.size(); i++) {
		close(env->shared_render[i]);
		close(env->shared_card[i]);
	}
	const int leaked_fds = close_unknown_dmabufs();
	set_plant(UALINK_SIM_PLANT_NONE);
	settle_pod(env->accels);

	// Dma-buf releases run as the closing task returns to user space, or
	// from a workqueue for a killed child's: wait for the counts.
	drm_ualink_sim_pod_stats after{};
	for (int i = 0; i < 300; i++) {
		after = pod_stats(env->accels[0]);
		if (same_counts(after, baseline))
			break;
		usleep(10'000);
	}
	const auto vm_after = pinmatrix::read_vmstat();
	auto delta = [&](const char *k) { return int64_t(vm_after.at(k) - vm_before.at(k)); };
	const int64_t acquired = delta("nr_foll_pin_acquired"), released = delta("nr_foll_pin_released");

	long calls = 0, ok = 0;
	std::printf("ualink_fuzz: %zu accelerators; operation: system calls, succeeded, errno:count\n",
		    env->accels.size());
	for (unsigned i = 0; i < op_count; i++) {
		calls += total.calls[i];
		ok += total.ok[i];
		std::string errs;
		for (const auto &[e, n] : total.errnos[i]) {
			const char *name = strerrorname_np(e);
			errs += " " + (name ? std::string(name) : std::to_string(e)) + ":" + std::to_string(n);
		}
		std::printf("  %-20s %6ld %6ld%s\n", op_names[i], total.calls[i], total.ok[i], errs.c_str());
	}
	std::printf("ualink_fuzz: seed %llu, %ld operations (%ld system calls, %ld succeeded), %d threads, "
		    "%d forks, fault bits %s; %.1f s; FOLL_PIN acquired %lld, released %lld; %d dma-buf fds "
		    "installed by ioctls that reported EFAULT\n",
		    (unsigned long long)o.seed, (o.calls / o.threads) * o.threads, calls, ok, o.threads,
		    o.forks, o.fault_bits ? "on" : "off", seconds, (long long)acquired, (long long)released,
		    leaked_fds);
	std::printf("ualink_fuzz: model objects before %s; after %s\n", counts(baseline).c_str(),
		    counts(after).c_str());

	std::vector<std::string> failures;
	for (const auto &[kind, f] : total.findings)
		failures.push_back(kind + ": " + std::to_string(f.first) + " time(s)" +
				   (f.second.empty() ? "" : "; first: " + f.second));
	if (!same_counts(after, baseline))
		failures.push_back("model objects not freed: " + counts(after));
	if (acquired != released)
		failures.push_back(std::to_string(acquired - released) + " FOLL_PIN pins not released");
	for (const auto &line : klog->new_alarms())
		if (failures.size() < 40)
			failures.push_back("kernel log: " + line);
	if (loaded_here) {
		int rc = -1;
		for (int i = 0; i < 300 && rc; i++) {
			rc = int(syscall(SYS_delete_module, "ualink_sim", O_NONBLOCK));
			if (rc)
				usleep(10'000);
		}
		if (rc)
			failures.push_back(std::string("ualink_sim does not unload: ") + strerror(errno));
		else
			std::printf("ualink_fuzz: ualink_sim unloaded\n");
	}
	for (const auto &f : failures)
		std::printf("FAIL: %s\n", f.c_str());
	std::printf("%d passed, %d failed\n", failures.empty() ? 1 : 0, failures.empty() ? 0 : 1);
	return failures.empty() ? 0 : 1;
}
