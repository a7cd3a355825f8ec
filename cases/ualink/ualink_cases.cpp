// SPDX-License-Identifier: GPL-2.0
#include "ualink_cases.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/dma-buf.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <stdexcept>
#include <thread>

#include "byte_pattern.hpp"
#include "capability.hpp"
#include "kernel_log.hpp"
#include "suite.hpp"
#include "sys_error.hpp"
#include "text.hpp"

namespace pinmatrix::ualink {

using nlohmann::json;

namespace {

constexpr uint32_t vram = AMDGPU_GEM_DOMAIN_VRAM;
constexpr uint32_t gtt = AMDGPU_GEM_DOMAIN_GTT;
constexpr uint64_t bo_size = 64 << 10;

// Seed sentences and review comments, quoted once.
constexpr std::string_view doc_same_handle =
	"v2 doc: \"Calling export on the same GEM handle always returns the same UALink handle.\"";
constexpr std::string_view doc_unique_handle =
	"v2 doc: \"The IOCTL returns a unique 128 bit handle which can be shared with the remote host.\"";
constexpr std::string_view doc_import =
	"v2 doc: \"the importer can create the GEM to represent the NPA space used by the allocation. "
	"The GEM object is then exported to the caller as a dma-buf.\"; cover letter: \"it is direct "
	"loads/stores over the fabric\"";
constexpr std::string_view doc_reimport =
	"v2 doc: \"If the memory has already been imported, it just returns a new reference to the "
	"existing GEM object.\"";
constexpr std::string_view doc_authorized =
	"v2 doc: \"Shared memory can only be accessed by a remote GPU if the memory was exported and "
	"the importer has been authorized.\"";
constexpr std::string_view doc_not_cpu =
	"v2 doc: \"Remote NPAs are managed like another device specific TTM pool ... however they "
	"cannot be CPU mapped.\" / \"The remote memory is not CPU accessible.\"";
constexpr std::string_view doc_handle_count =
	"Felix Kuehling's review: \"the UALink handle is destroyed when the GEM handle count reaches "
	"0\"; v2 doc: \"Remote TLB shootdowns from the exporter are used when the exported memory is "
	"freed in order to remove access by remote GPUs.\"";
constexpr std::string_view doc_pinned =
	"Felix Kuehling's review: \"We ended up having to pin exported memory.\"; v2 doc: \"Exported "
	"memory is pinned. This is similar to how dma-bufs in VRAM are pinned for P2P access.\"";
constexpr std::string_view doc_reset =
	"v2 doc: \"If a node goes offline or is reset, their peers will clean up any remaining "
	"refrences that are lost when that happens.\"";
constexpr std::string_view doc_no_npa =
	"Felix Kuehling's review: \"NPA addresses are never given to user mode.\"; v2 doc: \"NPA "
	"addresses are never exposed to user space.\"";

std::string us(int64_t ns)
{
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%.1f us", double(ns) / 1000.0);
	return buf;
}

uint64_t random_u64()
{
	// Not std::random_device: getrandom() blocks until the crng is ready,
	// which in a fresh TCG guest takes seconds. Forged handles need no
	// secrecy, only variety.
	static std::mt19937_64 rng{uint64_t(now_ns()) ^ (uint64_t(getpid()) << 32)};
	return rng();
}

// A handle nobody exported: random, with the given accelerator id.
handle128 forged_handle(uint32_t accel_id)
{
	return {(random_u64() & ~AMDGPU_UALINK_HANDLE_ACCID_MASK_U64) | accel_id, random_u64()};
}

// dma-buf CPU access brackets (DMA_BUF_IOCTL_SYNC), as any dma-buf user must.
void dmabuf_sync(int fd, uint64_t flags)
{
	dma_buf_sync s{};
	s.flags = flags;
	while (ioctl(fd, DMA_BUF_IOCTL_SYNC, &s) && errno == EINTR)
		;
}

// An exporter's BO with a CPU view through its own (PRIME) dma-buf.
struct cpu_bo {
	gem_handle gem;
	unique_fd dmabuf;
	shared_map map;

	void write(size_t offset, std::span<const std::byte> data)
	{
		dmabuf_sync(dmabuf.get(), DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE);
		std::memcpy(map.bytes().data() + offset, data.data(), data.size());
		dmabuf_sync(dmabuf.get(), DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE);
	}
	std::vector<std::byte> read(size_t offset, size_t n)
	{
		dmabuf_sync(dmabuf.get(), DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
		std::vector<std::byte> out(map.bytes().begin() + long(offset),
					   map.bytes().begin() + long(offset + n));
		dmabuf_sync(dmabuf.get(), DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
		return out;
	}
};

cpu_bo make_cpu_bo(const accel &a, uint64_t size, uint32_t domains, uint64_t seed)
{
	cpu_bo bo;
	bo.gem = a.create_bo(size, domains);
	bo.dmabuf = a.prime_export(bo.gem.get());
	if (int rc = shared_map::try_map(bo.dmabuf.get(), size, 0, PROT_READ | PROT_WRITE, bo.map))
		throw sys_error(-rc, "mmap of the exporter's dma-buf on " + a.node());
	bo.write(0, pattern(seed, size));
	return bo;
}

std::string bytes_diff(const std::vector<std::byte> &want, const std::vector<std::byte> &got)
{
	if (want.size() != got.size())
		return std::to_string(got.size()) + " bytes";
	for (size_t i = 0; i < want.size(); i++)
		if (want[i] != got[i])
			return "differs at byte " + std::to_string(i);
	return "equal";
}

// Restores "active" however the case ends (the suite also does, between
// cases, should a case die with an accelerator offline).
class state_guard {
public:
	state_guard(const accel &a, const std::string &state) : a_(a) { a_.set_accel_state(state); }
	state_guard(const state_guard &) = delete;
	state_guard &operator=(const state_guard &) = delete;
	~state_guard()
	{
		try {
			a_.set_accel_state("active");
		} catch (...) {
		}
	}

private:
	const accel &a_;
};

// The model's counts that must come back to where a case started.
json counts(const drm_ualink_sim_pod_stats &s)
{
	return {{"bos", s.bos},	    {"remote_objects", s.remote_objects}, {"exports", s.exports},
		{"imports", s.imports}, {"pins", s.pins}};
}

// dma-buf releases run when the closing task returns to user space: give
// the counts a moment to settle.
json settled_counts(const accel &a, const json &want)
{
	json now;
	for (int i = 0; i < 100; i++) {
		now = counts(a.stats());
		if (now == want)
			break;
		usleep(10'000);
	}
	return now;
}

int kernel_alarms(std::string *first = nullptr)
{
	std::string log;
	try {
		log = read_kernel_log();
	} catch (const std::system_error &e) {
		throw unmet_need(std::string("cannot read the kernel log: ") + e.what());
	}
	const auto found = pinmatrix::kernel_alarms(log);
	if (!found.empty() && first)
		*first = found.front();
	return int(found.size());
}

// ---------------------------------------------------------------------------
// The cases

void abi_layout(case_context &c)
{
	using U = drm_amdgpu_ualink_handle;
	c.expect_value("sizeof(union drm_amdgpu_ualink_handle)", "sizeof-union", sizeof(U));
	c.expect_value("sizeof(struct drm_amdgpu_ualink_handle_in)", "sizeof-in",
		       sizeof(drm_amdgpu_ualink_handle_in));
	c.expect_value("sizeof(union drm_amdgpu_ualink_handle_out)", "sizeof-out",
		       sizeof(drm_amdgpu_ualink_handle_out));
	c.expect_value("offsetof(in.op)", "offset-op", offsetof(U, in.op));
	c.expect_value("offsetof(in.flags)", "offset-flags", offsetof(U, in.flags));
	c.expect_value("offsetof(in.gem_handle)", "offset-gem-handle", offsetof(U, in.gem_handle));
	c.expect_value("offsetof(in.import_ualink_handle)", "offset-import-handle",
		       offsetof(U, in.import_ualink_handle));
	c.expect_value("offsetof(out.export_ualink_handle)", "offset-export-handle",
		       offsetof(U, out.export_ualink_handle));
	c.expect_value("offsetof(out.import_dmabuf_handle)", "offset-dmabuf-fd",
		       offsetof(U, out.import_dmabuf_handle));
	c.expect_value("DRM_AMDGPU_UALINK_HANDLE", "nr", DRM_AMDGPU_UALINK_HANDLE);
	c.expect_value("DRM_IOCTL_AMDGPU_UALINK_HANDLE", "ioctl", DRM_IOCTL_AMDGPU_UALINK_HANDLE);
	c.expect_value("DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT", "op-export",
		       DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT);
	c.expect_value("DRM_AMDGPU_UALINK_HANDLE_OP_IMPORT", "op-import",
		       DRM_AMDGPU_UALINK_HANDLE_OP_IMPORT);
	c.summary = "24-byte union, ioctl " + hex(DRM_IOCTL_AMDGPU_UALINK_HANDLE);
}

void export_idempotent(case_context &c)
{
	const accel &a = c.pod.exporter();
	auto bo = a.create_bo(bo_size, vram);
	handle128 first, again;
	const int64_t t0 = now_ns();
	const int rc1 = a.try_export(bo.get(), first);
	const int64_t t1 = now_ns();
	c.expect_rc("first export", "export", rc1);
	std::vector<int64_t> repeat;
	bool same = true;
	for (int i = 0; i < 16; i++) {
		const int64_t r0 = now_ns();
		const int rc = a.try_export(bo.get(), again);
		repeat.push_back(now_ns() - r0);
		if (rc || !(again == first)) {
			same = false;
			c.expect_rc("export again", "export", rc);
			break;
		}
	}
	c.expect("16 more exports of the same GEM handle return the same handle", same,
		 to_string(first), to_string(again));

	// The handle belongs to the BO: a second GEM handle of it (another file).
	accel a2 = a.reopen();
	auto dmabuf = a.prime_export(bo.get());
	auto bo2 = a2.prime_to_handle(dmabuf.get());
	handle128 other;
	const int rc3 = a2.try_export(bo2.get(), other);
	c.expect_rc("export through a second GEM handle of the BO (another file)", "export", rc3);
	c.expect("... returns the BO's one handle", rc3 == 0 && other == first, to_string(first),
		 to_string(other));

	std::sort(repeat.begin(), repeat.end());
	c.latency_ns = t1 - t0;
	c.facts["export_first_ns"] = t1 - t0;
	c.facts["export_again_median_ns"] = repeat[repeat.size() / 2];
	c.facts["handle"] = to_string(first);
	c.summary = "same handle x18; export " + us(t1 - t0) + ", again " + us(repeat[repeat.size() / 2]);
}

void export_distinct(case_context &c)
{
	const accel &a = c.pod.exporter();
	const auto n = size_t(c.def.want("bos"));
	std::vector<gem_handle> bos;
	std::vector<handle128> handles;
	for (size_t i = 0; i < n; i++) {
		bos.push_back(a.create_bo(4096, vram));
		handle128 h;
		if (int rc = a.try_export(bos.back().get(), h)) {
			c.expect_rc("export of BO " + std::to_string(i), "export", rc);
			return;
		}
		handles.push_back(h);
	}
	std::set<uint64_t> lo, hi;
	std::set<std::pair<uint64_t, uint64_t>> both;
	for (const auto &h : handles) {
		lo.insert(h.lo);
		hi.insert(h.hi);
		both.insert({h.lo, h.hi});
	}
	c.expect_value("distinct 128-bit handles", "bos", int64_t(both.size()));
	c.expect_value("distinct low halves (the import lookup key)", "bos", int64_t(lo.size()));
	c.expect_value("distinct high halves", "bos", int64_t(hi.size()));
	c.summary = std::to_string(both.size()) + " BOs, " + std::to_string(both.size()) + " handles";
}

void export_accel_id(case_context &c)
{
	std::string ids;
	for (const accel &a : c.pod.found.accels) {
		auto bo = a.create_bo(4096, vram);
		handle128 h;
		const int rc = a.try_export(bo.get(), h);
		if (!c.expect_rc("export on accelerator " + std::to_string(a.id()), "export", rc))
			continue;
		c.expect("bits 9:0 of handle_lo on accelerator " + std::to_string(a.id()),
			 h.accel_id() == a.id(), std::to_string(a.id()), std::to_string(h.accel_id()));
		c.expect("handle_lo on accelerator " + std::to_string(a.id()) + " is not 0", h.lo != 0,
			 "!= 0", hex(h.lo));
		ids += (ids.empty() ? "" : ",") + std::to_string(h.accel_id());
	}
	c.summary = "low bits = accel ids " + ids;
}

void export_unpredictable(case_context &c)
{
	const accel &a = c.pod.exporter();
	const auto n = size_t(c.def.want("exports"));
	std::vector<gem_handle> bos;
	std::vector<handle128> hs;
	for (size_t i = 0; i < n; i++) {
		bos.push_back(a.create_bo(4096, vram));
		handle128 h;
		if (int rc = a.try_export(bos.back().get(), h)) {
			c.expect_rc("export " + std::to_string(i), "export", rc);
			return;
		}
		hs.push_back(h);
	}
	// A counter shows as one repeated step between successive handles.
	std::set<uint64_t> steps_lo, steps_hi;
	for (size_t i = 1; i < n; i++) {
		steps_lo.insert((hs[i].lo >> AMDGPU_UALINK_HANDLE_ACCID_BITS) -
				(hs[i - 1].lo >> AMDGPU_UALINK_HANDLE_ACCID_BITS));
		steps_hi.insert(hs[i].hi - hs[i - 1].hi);
	}
	c.expect("successive handle_lo are not a counter", steps_lo.size() > n / 2,
		 "> " + std::to_string(n / 2) + " distinct steps", std::to_string(steps_lo.size()));
	c.expect("successive handle_hi are not a counter", steps_hi.size() > n / 2,
		 "> " + std::to_string(n / 2) + " distinct steps", std::to_string(steps_hi.size()));

	// Monobit test on each of the 118 random bits: a fair bit is 1 in n/2 of
	// the handles, give or take sigma = sqrt(n)/2.
	const double sigma = std::sqrt(double(n)) / 2;
	const double k = double(c.def.want("sigmas"));
	const double low = double(n) / 2 - k * sigma, high = double(n) / 2 + k * sigma;
	int worst_bit = -1;
	size_t worst_ones = n / 2;
	size_t biased = 0;
	for (int bit = AMDGPU_UALINK_HANDLE_ACCID_BITS; bit < 128; bit++) {
		size_t ones = 0;
		for (const auto &h : hs)
			ones += bit < 64 ? (h.lo >> bit) & 1 : (h.hi >> (bit - 64)) & 1;
		const auto dist = [&](size_t o) { return std::abs(double(o) - double(n) / 2); };
		if (dist(ones) >= dist(worst_ones)) {
			worst_ones = ones;
			worst_bit = bit;
		}
		biased += double(ones) < low || double(ones) > high;
	}
	char bound[64];
	std::snprintf(bound, sizeof(bound), "every bit 1 in %.0f..%.0f of %zu", std::ceil(low),
		      std::floor(high), n);
	c.expect("each random bit is fair (monobit, " + std::to_string(int(k)) + " sigma)", biased == 0,
		 bound,
		 std::to_string(biased) + " biased bits; worst bit " + std::to_string(worst_bit) + ": " +
			 std::to_string(worst_ones));
	c.facts["handles"] = n;
	c.facts["worst_bit"] = worst_bit;
	c.facts["worst_bit_ones"] = worst_ones;
	c.facts["distinct_steps_lo"] = steps_lo.size();
	c.summary = std::to_string(n) + " handles, worst bit " + std::to_string(worst_ones) + "/" +
		    std::to_string(n);
}

void export_bad_gem_handle(case_context &c)
{
	const accel &a = c.pod.exporter();
	handle128 h;
	c.expect_rc("export of GEM handle 0", "export", a.try_export(0, h));
	c.expect_rc("export of GEM handle 0xffffffff", "export", a.try_export(0xffffffff, h));
	auto bo = a.create_bo(4096, vram);
	const uint32_t closed = bo.get();
	bo.reset();
	c.expect_rc("export of a closed GEM handle", "export", a.try_export(closed, h));
	c.summary = "ENOENT x3";
}

void export_non_vram(case_context &c)
{
	const accel &a = c.pod.exporter();
	handle128 h;
	auto gtt_only = a.create_bo(bo_size, gtt);
	c.expect_rc("export of a GTT-only BO", "gtt-only", a.try_export(gtt_only.get(), h));
	auto both = a.create_bo(bo_size, vram | gtt);
	c.expect_rc("export of a VRAM|GTT BO", "vram-gtt", a.try_export(both.get(), h));
	auto vram_only = a.create_bo(bo_size, vram);
	c.expect_rc("export of a VRAM BO", "vram", a.try_export(vram_only.get(), h));
}

void unknown_op(case_context &c)
{
	const accel &a = c.pod.exporter();
	auto bo = a.create_bo(4096, vram);
	for (uint32_t op : {2u, 3u, 0x80000000u, 0xffffffffu}) {
		drm_amdgpu_ualink_handle arg{};
		arg.in.op = op;
		arg.in.gem_handle = bo.get();
		c.expect_rc("op " + hex(op), "op", a.ualink_ioctl(arg));
	}
}

void nonzero_flags(case_context &c)
{
	const accel &a = c.pod.exporter();
	auto bo = a.create_bo(4096, vram);
	handle128 h;
	for (uint32_t flags : {1u, 2u, 0x80000000u})
		c.expect_rc("export with flags " + hex(flags), "flags", a.try_export(bo.get(), h, flags));
	const handle128 good = a.export_bo(bo.get());
	unique_fd fd;
	c.expect_rc("import (on the exporter) with flags 0x1", "flags", a.try_import(good, fd, 1));
	// The same rule on the other import path: an importer on a peer.
	if (c.pod.remote_count() > 0) {
		unique_fd pfd;
		c.expect_rc("import on a peer with flags 0x1", "flags", c.pod.remote().try_import(good, pfd, 1));
		c.expect_rc("import on a peer with flags 0x80000000", "flags",
			    c.pod.remote().try_import(good, pfd, 0x80000000u));
	}
	c.facts["note"] = "the posted amdgpu ioctl never reads flags (a defect this case flags)";
}

void inactive_state_first(case_context &c)
{
	const accel &a = c.pod.exporter();
	a.require_model("writable accel_state");
	auto bo = a.create_bo(4096, vram);
	const handle128 h = a.export_bo(bo.get());
	handle128 out;
	unique_fd fd;
	{
		state_guard offline(a, "ready");
		c.facts["accel_state"] = a.accel_state();
		c.expect_rc("export of a valid BO", "inactive", a.try_export(bo.get(), out));
		drm_amdgpu_ualink_handle arg{};
		arg.in.op = 7;
		c.expect_rc("unknown op 7", "inactive", a.ualink_ioctl(arg));
		c.expect_rc("flags 0x1", "inactive", a.try_export(bo.get(), out, 1));
		c.expect_rc("GEM handle 0", "inactive", a.try_export(0, out));
		c.expect_rc("import of a handle", "inactive", a.try_import(h, fd));
		c.expect_rc("import of accel id 1000", "inactive", a.try_import(forged_handle(1000), fd));
	}
	c.expect_rc("export once active again", "active-again", a.try_export(bo.get(), out));
	c.summary = "EOPNOTSUPP x6 while '" + c.facts["accel_state"].get<std::string>() + "'";
}

void union_aliasing(case_context &c)
{
	const accel &a = c.pod.exporter();
	auto bo = make_cpu_bo(a, bo_size, vram, 11);
	const handle128 clean = a.export_bo(bo.gem.get());

	// Stale bytes behind gem_handle (12-23): a reused argument.
	drm_amdgpu_ualink_handle arg;
	std::memset(&arg, 0xa5, sizeof(arg));
	arg.in.op = DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT;
	arg.in.flags = 0;
	arg.in.gem_handle = bo.gem.get();
	int rc = a.ualink_ioctl(arg);
	c.expect_rc("export with 0xa5 in bytes 12-23", "export", rc);
	const handle128 got{arg.out.export_ualink_handle[0], arg.out.export_ualink_handle[1]};
	c.expect("... gives the same handle", rc == 0 && got == clean, to_string(clean), to_string(got));

	// The previous output left in place, op/flags/gem_handle rewritten.
	arg.out.export_ualink_handle[0] = clean.lo;
	arg.out.export_ualink_handle[1] = clean.hi;
	arg.in.op = DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT;
	arg.in.flags = 0;
	arg.in.gem_handle = bo.gem.get();
	rc = a.ualink_ioctl(arg);
	c.expect_rc("export over the previous output", "export", rc);

	// Import: the fd is written over op; the handle must be latched first.
	drm_amdgpu_ualink_handle imp{};
	imp.in.op = DRM_AMDGPU_UALINK_HANDLE_OP_IMPORT;
	imp.in.import_ualink_handle[0] = clean.lo;
	imp.in.import_ualink_handle[1] = clean.hi;
	rc = a.ualink_ioctl(imp);
	c.expect_rc("import on the exporter", "import", rc);
	if (!rc) {
		unique_fd fd(int(imp.out.import_dmabuf_handle));
		c.expect("the fd written over op is the BO's dma-buf",
			 identify(fd.get()) == identify(bo.dmabuf.get()), "same inode", "other");
	}
}

void import_dmabuf_data(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	auto bo = make_cpu_bo(a, bo_size, vram, 1);
	const handle128 h = a.export_bo(bo.gem.get());

	unique_fd fd;
	const int64_t t0 = now_ns();
	const int rc = b.try_import(h, fd);
	const int64_t t1 = now_ns();
	if (!c.expect_rc("import on accelerator " + std::to_string(b.id()), "import", rc))
		return;
	c.expect("the import output is a dma-buf fd", is_dmabuf(fd.get()), "dma-buf", "not a dma-buf");
	const off_t size = lseek(fd.get(), 0, SEEK_END);
	c.expect("its size is the BO's", uint64_t(size) == bo_size, std::to_string(bo_size),
		 std::to_string(size));
	auto bh = b.prime_to_handle(fd.get());

	std::vector<std::byte> seen(bo_size);
	c.expect_rc("remote load of the whole BO", "access", b.try_remote_access(bh.get(), false, 0, seen));
	c.expect("the importer sees what the exporter wrote", seen == pattern(1, bo_size), "equal",
		 bytes_diff(pattern(1, bo_size), seen));
	auto store = pattern(2, 4096);
	c.expect_rc("remote store of 4 KiB at 8 KiB", "access",
		    b.try_remote_access(bh.get(), true, 8192, store));
	c.expect("the exporter sees the importer's store", bo.read(8192, 4096) == store, "equal",
		 bytes_diff(store, bo.read(8192, 4096)));

	unique_fd again;
	const int64_t t2 = now_ns();
	c.expect_rc("import again", "import", b.try_import(h, again));
	const int64_t t3 = now_ns();

	c.latency_ns = t1 - t0;
	c.facts["import_first_ns"] = t1 - t0;
	c.facts["import_again_ns"] = t3 - t2;
	c.facts["importer"] = b.id();
	c.summary = "dma-buf, data both ways; import " + us(t1 - t0) + ", again " + us(t3 - t2);
}

void double_import_same_object(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	auto bo = a.create_bo(bo_size, vram);
	const handle128 h = a.export_bo(bo.get());
	std::optional<drm_ualink_sim_pod_stats> before;
	if (a.is_model())
		before = a.stats();

	auto fd1 = b.import(h);
	auto fd2 = b.import(h);
	c.expect("two imports give the same dma-buf", identify(fd1.get()) == identify(fd2.get()),
		 "same inode", "different inodes");
	auto h1 = b.prime_to_handle(fd1.get());
	uint32_t h2 = 0;
	const int rc = b.try_prime_to_handle(fd2.get(), h2);
	c.expect("... and the same GEM handle on the importer", rc == 0 && h2 == h1.get(),
		 std::to_string(h1.get()), rc ? rc_name(rc) : std::to_string(h2));
	if (!rc && h2 != h1.get())
		b.gem_close(h2);

	accel b2 = b.reopen();
	auto fd3 = b2.import(h);
	c.expect("an import from another file of the importer gives it too",
		 identify(fd3.get()) == identify(fd1.get()), "same inode", "different inode");

	if (before) {
		const auto after = a.stats();
		c.expect_value("imported objects made for three imports", "objects",
			       int64_t(after.remote_objects - before->remote_objects));
		c.expect_value("importer records for three imports", "objects",
			       int64_t(after.imports - before->imports));
	}
	c.summary = "one object for 3 imports";
}

void import_on_exporter(case_context &c)
{
	const accel &a = c.pod.exporter();
	auto bo = make_cpu_bo(a, bo_size, vram, 3);
	const handle128 h = a.export_bo(bo.gem.get());
	unique_fd fd;
	if (!c.expect_rc("import on the exporter itself", "import", a.try_import(h, fd)))
		return;
	c.expect("it is the BO's own dma-buf (amdgpu's local import, no NPA)",
		 identify(fd.get()) == identify(bo.dmabuf.get()), "same inode as PRIME export", "other");
	uint32_t handle = 0;
	const int rc = a.try_prime_to_handle(fd.get(), handle);
	c.expect("drmPrimeFDToHandle gives the original GEM handle", rc == 0 && handle == bo.gem.get(),
		 std::to_string(bo.gem.get()), rc ? rc_name(rc) : std::to_string(handle));
	if (!rc && handle != bo.gem.get())
		a.gem_close(handle);
	shared_map view;
	const int mrc = shared_map::try_map(fd.get(), bo_size, 0, PROT_READ, view);
	c.expect_rc("CPU map of it (local memory is CPU accessible)", "import", mrc);
	if (!mrc) {
		dmabuf_sync(fd.get(), DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
		std::vector<std::byte> seen(view.bytes().begin(), view.bytes().end());
		dmabuf_sync(fd.get(), DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
		c.expect("it shows the exporter's data", seen == pattern(3, bo_size), "equal",
			 bytes_diff(pattern(3, bo_size), seen));
	}
	c.summary = "own dma-buf, same GEM handle";
}

void import_forged(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	auto bo = a.create_bo(bo_size, vram);
	const handle128 h = a.export_bo(bo.get());
	auto refused = [&](const std::string &what, handle128 f) {
		unique_fd fd;
		c.expect_rc(what, "forged", b.try_import(f, fd));
	};
	refused("a handle nobody exported", forged_handle(a.id()));
	refused("right handle_lo, wrong handle_hi, before any import", {h.lo, h.hi ^ 1});
	refused("right handle_hi, wrong handle_lo", {h.lo ^ (1ull << 20), h.hi});
	unique_fd legit;
	c.expect_rc("the exported handle", "legit", b.try_import(h, legit));
	refused("right handle_lo, wrong handle_hi, after a legitimate import",
		{h.lo, h.hi ^ 0x8000000000000000ull});
	refused("right handle_lo, handle_hi 0, after a legitimate import", {h.lo, 0});
	// Every import path reaches the same decision: the exporter itself (the
	// local import), before and after a legitimate local import, and a
	// second importer whose first import this is.
	auto refused_on = [&](const accel &on, const std::string &what, handle128 f) {
		unique_fd fd;
		c.expect_rc(what, "forged", on.try_import(f, fd));
	};
	refused_on(a, "on the exporter: right handle_lo, wrong handle_hi", {h.lo, h.hi ^ 1});
	unique_fd local;
	c.expect_rc("the exported handle on the exporter", "legit", a.try_import(h, local));
	refused_on(a, "on the exporter: right handle_lo, handle_hi 0, after a local import", {h.lo, 0});
	if (c.pod.remote_count() > 1) {
		const accel &second = c.pod.remote(1);
		refused_on(second, "a second importer: right handle_lo, wrong handle_hi, its first import",
			   {h.lo, h.hi ^ 4});
		unique_fd fd2;
		c.expect_rc("the exported handle on a second importer", "legit", second.try_import(h, fd2));
		refused_on(second, "a second importer: right handle_lo, wrong handle_hi, after its import",
			   {h.lo, ~h.hi});
	}
	c.facts["note"] = "the posted driver looks an imported handle up by handle_lo alone";
}

// The primary node of an accelerator, opened twice: its DRM master, and a
// client the master has not authenticated.
struct primary_files {
	accel master;
	accel client;
};

primary_files open_primary_pair(const accel &a)
{
	accel master = a.open_primary();
	if (!master.become_master())
		throw unmet_need(master.node() + ": another file is its DRM master (a display server?)");
	// Root's DRM files are authenticated from the start (drm_file_alloc():
	// "for compatibility root is always authenticated", capable(CAP_SYS_ADMIN)
	// at open): the client opens its node without CAP_SYS_ADMIN.
	effective_cap_dropped no_admin(CAP_SYS_ADMIN);
	if (!no_admin.ok())
		throw sys_error(-no_admin.error(), "capset: drop CAP_SYS_ADMIN to open a client");
	return {std::move(master), a.open_primary()};
}

// The same export and import from each kind of DRM file: the render node,
// the primary node's master, a primary-node client before and after the
// master authenticated it; on the exporter (export, local import) and on a
// peer (its first import by the master, the client's repeated one).
void primary_node_auth(case_context &c)
{
	const accel &a = c.pod.exporter();
	auto bo = a.create_bo(bo_size, vram);
	handle128 h;
	c.expect_rc("export from a render-node client", "render", a.try_export(bo.get(), h));
	auto shared = a.prime_export(bo.get());
	auto ops = [&](const accel &who, const gem_handle *gem, const std::string &as, std::string_view key) {
		handle128 out;
		unique_fd fd;
		if (gem)
			c.expect_rc("export from " + as, key, who.try_export(gem->get(), out));
		c.expect_rc("import on " + as, key, who.try_import(h, fd));
	};
	// On the exporter each file exports the BO through its own GEM handle.
	auto each_file = [&](const primary_files &f, bool exporter, const std::string &where) {
		gem_handle on_master, on_client;
		if (exporter) {
			on_master = f.master.prime_to_handle(shared.get());
			on_client = f.client.prime_to_handle(shared.get());
		}
		ops(f.master, exporter ? &on_master : nullptr, "the master of " + where, "master");
		ops(f.client, exporter ? &on_client : nullptr, "an unauthenticated client of " + where,
		    "unauthenticated");
		if (const int rc = f.client.try_authenticate(f.master))
			throw std::system_error(-rc, std::generic_category(),
						"drmGetMagic/drmAuthMagic on " + f.master.node());
		ops(f.client, exporter ? &on_client : nullptr, "that client once authenticated", "authenticated");
	};
	const primary_files ex = open_primary_pair(a);
	each_file(ex, true, "the exporter's primary node " + ex.master.node());
	c.facts["primary_node"] = ex.master.node();
	if (c.pod.remote_count() > 0) {
		const primary_files peer = open_primary_pair(c.pod.remote());
		each_file(peer, false, "a peer's primary node " + peer.master.node());
		c.facts["peer_primary_node"] = peer.master.node();
	}
	c.summary = "render, master, authenticated 0; unauthenticated EACCES";
}

void import_accel_id_range(case_context &c)
{
	const accel &a = c.pod.exporter();
	for (uint32_t id : {256u, 511u, 1023u}) {
		unique_fd fd;
		c.expect_rc("import of a handle with accel id " + std::to_string(id), "import",
			    a.try_import(forged_handle(id), fd));
	}
}

void import_unknown_peer(case_context &c)
{
	const accel &a = c.pod.exporter();
	const auto members = a.pod_members();
	uint32_t id = 0;
	while (id < AMDGPU_UALINK_ACCEL_MAX_IDS &&
	       std::find(members.begin(), members.end(), id) != members.end())
		id++;
	if (id == AMDGPU_UALINK_ACCEL_MAX_IDS)
		throw unmet_need("every accel id below 256 is a member of the pod");
	unique_fd fd;
	c.expect_rc("import of a handle from accel id " + std::to_string(id) + " (not in the pod)",
		    "import", a.try_import(forged_handle(id), fd));
	c.facts["unknown_id"] = id;
}

void import_mmap_refused(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	auto bo = a.create_bo(bo_size, vram);
	auto fd = b.import(a.export_bo(bo.get()));
	for (int prot : {PROT_READ, PROT_READ | PROT_WRITE}) {
		shared_map m;
		const int rc = shared_map::try_map(fd.get(), bo_size, 0, prot, m);
		c.expect(std::string("mmap(") + (prot & PROT_WRITE ? "PROT_READ|PROT_WRITE" : "PROT_READ") +
				 ") of the imported dma-buf fails",
			 rc != 0, "an error", rc_name(rc));
	}
	if (b.is_model()) {
		auto bh = b.prime_to_handle(fd.get());
		uint64_t offset = 0;
		c.expect_rc("the model's GEM mmap offset for the imported object", "gem-mmap",
			    b.try_gem_mmap_offset(bh.get(), offset));
	}
}

void last_close_revokes(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	const accel &other = c.pod.remote_count() > 1 ? c.pod.remote(1) : b;
	const json base = counts(a.stats());
	std::vector<std::byte> buf(4096);
	{
		accel a2 = a.reopen();
		auto bo = a.create_bo(bo_size, vram);
		// Holds the GEM object, not a GEM handle: the handle must die anyway.
		auto keep = a.prime_export(bo.get());
		auto bo2 = a2.prime_to_handle(keep.get());
		const handle128 h = a.export_bo(bo.get());
		auto fd = b.import(h);
		auto bh = b.prime_to_handle(fd.get());
		c.expect_rc("remote load, two GEM handles", "access", b.try_remote_access(bh.get(), false, 0, buf));

		bo.reset();
		c.expect_rc("remote load, one GEM handle left", "access",
			    b.try_remote_access(bh.get(), false, 0, buf));
		unique_fd fd2;
		c.expect_rc("import, one GEM handle left", "import", other.try_import(h, fd2));

		bo2.reset();	// the GEM handle count reaches 0; the dma-buf still holds the object
		c.expect_rc("remote load after the last GEM handle close", "access-after-revoke",
			    b.try_remote_access(bh.get(), false, 0, buf));
		// Every import path refuses the revoked handle: the importer that
		// had it, the exporter itself (the local import) and, with a third
		// accelerator, a peer whose first import of it this is.
		unique_fd fd3, local, first;
		c.expect_rc("import after the last GEM handle close", "import-after-revoke",
			    b.try_import(h, fd3));
		c.expect_rc("import on the exporter after the last GEM handle close", "import-after-revoke",
			    a.try_import(h, local));
		if (c.pod.remote_count() > 2)
			c.expect_rc("a peer's first import after the last GEM handle close", "import-after-revoke",
				    c.pod.remote(2).try_import(h, first));
		c.expect_value("the importer's object reports revoked", "revoked", b.info(bh.get()).revoked);
		const auto mid = counts(a.stats());
		for (const char *k : {"exports", "imports", "pins"})
			c.expect(std::string(k) + " back to where the case started, dma-buf still open",
				 mid[k] == base[k], base[k].dump(), mid[k].dump());
	}
	const json end = settled_counts(a, base);
	c.expect("every count back to where the case started once all is closed", end == base, base.dump(),
		 end.dump());
	c.summary = "revoked at handle count 0";
}

void exporter_pinned(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	a.require_model("pin count and eviction");
	auto bo = a.create_bo(bo_size, vram);
	const handle128 h = a.export_bo(bo.get());
	c.facts["pins_exported_not_imported"] = a.info(bo.get()).pins;
	auto fd = b.import(h);
	c.expect_value("pins with one importer", "pins-per-importer", a.info(bo.get()).pins);
	c.expect_rc("eviction while imported", "evict-while-imported", a.try_evict(bo.get()));
	if (c.pod.remote_count() > 1) {
		auto fd2 = c.pod.remote(1).import(h);
		c.expect_value("pins with two importers (one each)", "pins-two-importers",
			       a.info(bo.get()).pins);
		c.expect_rc("eviction with two importers", "evict-while-imported", a.try_evict(bo.get()));
	}
	c.facts["moves"] = a.info(bo.get()).moves;
	c.summary = "pinned per importer, eviction EBUSY";
}

void node_reset_cleans_peers(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	a.require_model("node reset and offline knobs");
	const json base = counts(a.stats());
	std::vector<std::byte> buf(4096);
	auto bo = a.create_bo(bo_size, vram);
	const handle128 h = a.export_bo(bo.get());

	// The importer resets: the exporter drops what it held for it.
	{
		auto fd = b.import(h);
		auto bh = b.prime_to_handle(fd.get());
		const auto id_before = identify(fd.get());
		b.reset_node();
		c.expect_value("exporter's pins after the importer's reset", "pins-after-importer-reset",
			       a.info(bo.get()).pins);
		c.expect_value("the export survives the importer's reset", "still-exported",
			       a.info(bo.get()).exported);
		c.expect_rc("the importer's old object after its reset", "access-after-reset",
			    b.try_remote_access(bh.get(), false, 0, buf));
		unique_fd again;
		c.expect_rc("import again after the importer's reset", "import", b.try_import(h, again));
		if (again)
			c.expect("... is a new object", identify(again.get()) != id_before, "new inode",
				 "the old one");
	}
	// The exporter resets: importers lose access, the handle is gone.
	{
		auto fd = b.import(h);
		auto bh = b.prime_to_handle(fd.get());
		a.reset_node();
		c.expect_rc("importer's load after the exporter's reset", "access-after-reset",
			    b.try_remote_access(bh.get(), false, 0, buf));
		unique_fd stale;
		c.expect_rc("import of the old handle after the exporter's reset", "import-after-reset",
			    b.try_import(h, stale));
		c.expect_value("the BO is no longer exported", "exported-after-reset",
			       a.info(bo.get()).exported);
	}
	// The exporter goes offline (accel_state leaves "active").
	{
		const handle128 h2 = a.export_bo(bo.get());
		c.expect("a new export after the reset is a new handle", !(h2 == h), "new", to_string(h2));
		auto fd = b.import(h2);
		auto bh = b.prime_to_handle(fd.get());
		{
			state_guard offline(a, "error");
			c.expect_rc("importer's load while the exporter is offline", "access-after-reset",
				    b.try_remote_access(bh.get(), false, 0, buf));
		}
		unique_fd stale;
		c.expect_rc("import of its handle once back", "import-after-reset", b.try_import(h2, stale));
	}
	bo.reset();
	const json end = settled_counts(a, base);
	c.expect("every count back to where the case started", end == base, base.dump(), end.dump());
	c.summary = "peers cleaned up after reset and offline";
}

void no_npa_in_output(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	auto bo = a.create_bo(bo_size, vram);
	std::vector<std::pair<std::string, std::vector<uint8_t>>> outputs;
	auto keep = [&](const std::string &what, const void *p, size_t n) {
		auto *u = static_cast<const uint8_t *>(p);
		outputs.emplace_back(what, std::vector<uint8_t>(u, u + n));
	};

	drm_amdgpu_ualink_handle exp{};
	exp.in.op = DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT;
	exp.in.gem_handle = bo.get();
	if (!c.expect_rc("export", "ok", a.ualink_ioctl(exp)))
		return;
	keep("export output", &exp, sizeof(exp));

	drm_amdgpu_ualink_handle imp{};
	imp.in.op = DRM_AMDGPU_UALINK_HANDLE_OP_IMPORT;
	imp.in.import_ualink_handle[0] = exp.out.export_ualink_handle[0];
	imp.in.import_ualink_handle[1] = exp.out.export_ualink_handle[1];
	const drm_amdgpu_ualink_handle sent = imp;
	if (!c.expect_rc("import", "ok", b.ualink_ioctl(imp)))
		return;
	unique_fd fd(int(imp.out.import_dmabuf_handle));
	keep("import output", &imp, sizeof(imp));
	const auto *s = reinterpret_cast<const uint8_t *>(&sent);
	const auto *r = reinterpret_cast<const uint8_t *>(&imp);
	size_t first_changed = 0;
	for (size_t i = 4; i < sizeof(imp) && !first_changed; i++)
		if (s[i] != r[i])
			first_changed = i;
	c.expect("the import writes its fd (bytes 0-3) and nothing else", first_changed == 0,
		 "bytes 4-23 as sent", "byte " + std::to_string(first_changed) + " changed");

	if (b.is_model()) {
		auto bh = b.prime_to_handle(fd.get());
		const auto info = b.info(bh.get());
		keep("importer's GEM_INFO", &info, sizeof(info));
		const auto st = b.stats();
		keep("POD_STATS", &st, sizeof(st));
		const auto ranges = model_npa_ranges();
		c.expect("the model holds an NPA range for this import (debugfs)", !ranges.empty(), ">= 1",
			 std::to_string(ranges.size()));
		std::string hit;
		for (const auto &[what, bytes] : outputs)
			for (size_t off = 0; off + 8 <= bytes.size() && hit.empty(); off += 4) {
				uint64_t w;
				std::memcpy(&w, bytes.data() + off, 8);
				for (const auto &[lo, hi] : ranges)
					if (w >= lo && w < hi)
						hit = what + " bytes " + std::to_string(off) + "-" +
						      std::to_string(off + 7) + " = " + hex(w);
			}
		c.expect("no 64-bit word of any output lies in an NPA range", hit.empty(), "none",
			 hit.empty() ? "none" : hit);
		c.facts["npa_ranges"] = ranges.size();
	}
	c.summary = "no NPA in " + std::to_string(outputs.size()) + " outputs";
}

// The stress case's tallies, shared by its threads.
struct stress_tally {
	std::atomic<bool> done{false};
	std::atomic<uint64_t> ops{0}, resets{0};
	std::mutex errors_lock;
	std::map<std::string, uint64_t> errors;

	void note(int rc)
	{
		if (!rc)
			return;
		std::lock_guard<std::mutex> g(errors_lock);
		errors[rc_name(rc)]++;
	}
};

// One stress thread: its own files, exporter and importer spread over the
// pod; create, export, import, map to a handle, access, close in either
// order (exporter first revokes under the importer).
void stress_worker(const std::vector<accel> &accels, size_t t, size_t iterations, stress_tally &tally)
{
	accel ex = accels[t % accels.size()].reopen();
	accel im = accels[(t + 1) % accels.size()].reopen();
	std::mt19937 rng{unsigned(t)};
	std::vector<std::byte> buf(512);
	for (size_t i = 0; i < iterations; i++) {
		gem_handle bo;
		if (int rc = ex.try_create_bo(8192, vram, bo)) {
			tally.note(rc);
			continue;
		}
		handle128 h;
		if (int rc = ex.try_export(bo.get(), h)) {
			tally.note(rc);
			continue;
		}
		unique_fd fd;
		tally.note(im.try_import(h, fd));
		gem_handle bh;
		if (fd) {
			uint32_t raw = 0;
			if (int rc = im.try_prime_to_handle(fd.get(), raw))
				tally.note(rc);
			else
				bh = gem_handle(im.fd(), raw);
		}
		if (bh)
			tally.note(im.try_remote_access(bh.get(), rng() & 1, 0, buf));
		if (rng() & 1)
			bo.reset();
		bh.reset();
		fd.reset();
		tally.ops += 4;
	}
}

// The workers, and one thread resetting victim until they are done; the
// seconds they took.
double run_stress(const std::vector<accel> &accels, const accel &victim, size_t threads, size_t iterations,
		  stress_tally &tally)
{
	std::vector<std::thread> pool;
	const int64_t t0 = now_ns();
	for (size_t t = 0; t < threads; t++)
		pool.emplace_back(stress_worker, std::cref(accels), t, iterations, std::ref(tally));
	std::thread resetter([&] {
		while (!tally.done) {
			try {
				victim.reset_node();
				tally.resets++;
			} catch (...) {
			}
			usleep(2000);
		}
	});
	for (auto &t : pool)
		t.join();
	tally.done = true;
	resetter.join();
	return double(now_ns() - t0) / 1e9;
}

void stress_no_leak(case_context &c)
{
	const auto &accels = c.pod.found.accels;
	const accel &a = c.pod.exporter();
	a.require_model("object counts");
	if (accels.size() < 3)
		throw unmet_need("needs 3 accelerators (2 exchanging, 1 being reset)");
	const json base = counts(a.stats());
	std::string first_alarm;
	const int alarms_before = kernel_alarms();
	const auto threads = size_t(c.def.want("threads"));
	const auto iterations = size_t(c.def.want("iterations"));
	stress_tally tally;
	const double seconds = run_stress(accels, accels.back(), threads, iterations, tally);

	const json end = settled_counts(a, base);
	c.expect("every count back to where the case started", end == base, base.dump(), end.dump());
	const int alarms_after = kernel_alarms(&first_alarm);
	c.expect("no kernel warning, BUG or oops", alarms_after == alarms_before, "none new",
		 std::to_string(alarms_after - alarms_before) + " new" +
			 (alarms_after > alarms_before ? " (first in log: " + first_alarm + ")" : ""));
	c.facts["threads"] = threads;
	c.facts["iterations"] = iterations;
	c.facts["operations"] = tally.ops.load();
	c.facts["resets"] = tally.resets.load();
	c.facts["errors"] = tally.errors;
	c.facts["seconds"] = seconds;
	c.summary = std::to_string(tally.ops.load()) + " ops, " + std::to_string(tally.resets.load()) +
		    " resets, counts back";
}

} // namespace

// ---------------------------------------------------------------------------
// The table

namespace {

// The uapi, and what export and the ioctl itself promise.
std::vector<case_def> abi_and_export_cases()
{
	return {
		{"abi-layout",
		 "uapi (PATCH 2/3, include/uapi/drm/amdgpu_drm.h): DRM_AMDGPU_UALINK_HANDLE 0x1B, DRM_IOWR, "
		 "union drm_amdgpu_ualink_handle {in: op, flags, union {gem_handle, import_ualink_handle[2]}; "
		 "out: export_ualink_handle[2] | import_dmabuf_handle}",
		 "24-byte union, ioctl 0xc018645b",
		 needs_nothing,
		 {{"sizeof-union", 24}, {"sizeof-in", 24}, {"sizeof-out", 16}, {"offset-op", 0},
		  {"offset-flags", 4}, {"offset-gem-handle", 8}, {"offset-import-handle", 8},
		  {"offset-export-handle", 0}, {"offset-dmabuf-fd", 0}, {"nr", 0x1B},
		  {"ioctl", 0xC018645B}, {"op-export", 0}, {"op-import", 1}},
		 abi_layout},
		{"export-idempotent", doc_same_handle, "same handle every time, from any GEM handle of the BO",
		 needs_device, {{"export", 0}}, export_idempotent},
		{"export-distinct", doc_unique_handle, "16 BOs, 16 distinct handles (both halves)", needs_device,
		 {{"export", 0}, {"bos", 16}}, export_distinct},
		{"export-accel-id",
		 "posted amdgpu_generate_ualink_handle(): \"Replace bottom 10 bits in handle_lo with accId\", "
		 "\"Don't generate/store a Handle with value 0\"",
		 "bits 9:0 = exporter's accel id, handle_lo != 0", needs_device, {{"export", 0}},
		 export_accel_id},
		{"export-unpredictable",
		 "v2 doc: \"Applications use opaque handles to represent remote memory.\" and \"Shared "
		 "memory can only be accessed by a remote GPU if the memory was exported and the importer "
		 "has been authorized.\" (a handle is a capability: it must not be guessable; the posted "
		 "driver uses get_random_u64())",
		 "128 handles: no counter, every random bit fair (5 sigma)", needs_device,
		 {{"export", 0}, {"exports", 128}, {"sigmas", 5}}, export_unpredictable},
		{"export-bad-gem-handle", "uapi in.gem_handle: \"GEM handle of the BO to export\" (posted: -ENOENT)",
		 "ENOENT", needs_device, {{"export", ENOENT}}, export_bad_gem_handle},
		{"export-non-vram", "posted amdgpu_ualink_export_handle(): \"Only VRAM BOs can be exported\"",
		 "GTT-only EOPNOTSUPP, VRAM ok", needs_device, {{"gtt-only", EOPNOTSUPP}, {"vram-gtt", 0}, {"vram", 0}},
		 export_non_vram},
		{"unknown-op", "uapi in.op: DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT 0 / _IMPORT 1 (posted: default -EINVAL)",
		 "EINVAL", needs_device, {{"op", EINVAL}}, unknown_op},
		{"nonzero-flags-rejected",
		 "uapi in.flags: \"For future use, no flags defined so far\" (unknown flags must be refused or "
		 "they can never get a meaning; the posted driver ignores them)",
		 "EINVAL", needs_device, {{"flags", EINVAL}}, nonzero_flags},
		{"inactive-state-first",
		 "posted amdgpu_gem_ualink_handle_ioctl(): accel_state != ACTIVE -> -EOPNOTSUPP, checked before "
		 "op (sysfs <dev>/ualink/accel_state)",
		 "EOPNOTSUPP for every request while not active", needs_device | needs_model,
		 {{"inactive", EOPNOTSUPP}, {"active-again", 0}}, inactive_state_first},
		{"union-aliasing",
		 "posted ioctl: \"The input and output members of the ioctl argument alias each other. Latch "
		 "every input field before invoking the handlers, and only write the output fields afterwards.\"",
		 "stale bytes ignored, same handle", needs_device, {{"export", 0}, {"import", 0}}, union_aliasing},
	};
}

// What import promises: the object, who may import it, and where from.
std::vector<case_def> import_cases()
{
	return {
		{"import-dmabuf-data", doc_import, "a dma-buf; exporter's data visible, importer's stores land",
		 needs_device | needs_remote | needs_model, {{"import", 0}, {"access", 0}}, import_dmabuf_data},
		{"double-import-same-object", doc_reimport, "same dma-buf, same GEM handle, one object",
		 needs_device | needs_remote, {{"objects", 1}}, double_import_same_object},
		{"import-on-exporter",
		 "posted amdgpu_ualink_local_import(): an import on the exporter's own node gets the BO's "
		 "dma-buf (no NPA)",
		 "the BO's own dma-buf", needs_device, {{"import", 0}}, import_on_exporter},
		{"import-forged-refused", doc_authorized,
		 "EINVAL, also right handle_lo + wrong handle_hi after an import", needs_device | needs_remote,
		 {{"forged", EINVAL}, {"legit", 0}}, import_forged},
		{"primary-node-auth",
		 "posted DRM_IOCTL_DEF_DRV(AMDGPU_UALINK_HANDLE, ..., DRM_AUTH|DRM_RENDER_ALLOW): any render-node "
		 "client; on the primary node the master or a client it authenticated (drmAuthMagic)",
		 "EACCES for an unauthenticated primary-node client, export and import", needs_device,
		 {{"render", 0}, {"master", 0}, {"unauthenticated", EACCES}, {"authenticated", 0}},
		 primary_node_auth},
		{"import-accel-id-range",
		 "posted amdgpu_ualink_import_handle(): accel id (handle_lo bits 9:0) >= "
		 "AMDGPU_UALINK_ACCEL_MAX (256) -> -EINVAL",
		 "EINVAL", needs_device, {{"import", EINVAL}}, import_accel_id_range},
		{"import-unknown-peer",
		 "posted amdgpu_ualink_import_handle(): no such peer in the pod -> -ENODEV "
		 "(<dev>/ualink/vpod_active_accels)",
		 "ENODEV", needs_device, {{"import", ENODEV}}, import_unknown_peer},
		{"import-mmap-refused", doc_not_cpu, "mmap of the imported dma-buf fails", needs_device | needs_remote,
		 {{"gem-mmap", EPERM}}, import_mmap_refused},
	};
}

// Lifetimes: revoke on last close, pins while imported, node resets, and all of it racing.
std::vector<case_def> lifetime_cases()
{
	return {
		{"last-close-revokes", doc_handle_count,
		 "alive until the last GEM handle; then access ENOLINK, import EINVAL, nothing leaks",
		 needs_device | needs_remote | needs_model,
		 {{"access", 0}, {"import", 0}, {"access-after-revoke", ENOLINK}, {"import-after-revoke", EINVAL},
		  {"revoked", 1}},
		 last_close_revokes},
		{"exporter-pinned-while-imported", doc_pinned, "one pin per importer, eviction EBUSY",
		 needs_device | needs_remote | needs_model,
		 {{"pins-per-importer", 1}, {"pins-two-importers", 2}, {"evict-while-imported", EBUSY}},
		 exporter_pinned},
		{"node-reset-cleans-peers", doc_reset,
		 "importer reset: exporter unpins; exporter reset/offline: importers ENOLINK, handle EINVAL",
		 needs_device | needs_remote | needs_model,
		 {{"pins-after-importer-reset", 0}, {"still-exported", 1}, {"access-after-reset", ENOLINK},
		  {"import", 0}, {"import-after-reset", EINVAL}, {"exported-after-reset", 0}},
		 node_reset_cleans_peers},
		{"no-npa-in-output", doc_no_npa, "import writes only its fd; no output word in an NPA range",
		 needs_device | needs_remote, {{"ok", 0}}, no_npa_in_output},
		{"stress-no-leak",
		 "the exporter/importer lifetime rules above under concurrency (export, import, close, node "
		 "reset racing): the kernel must never oops or WARN, and nothing may leak",
		 "counts back to baseline, no kernel warning", needs_device | needs_model,
		 {{"threads", 4}, {"iterations", 60}}, stress_no_leak},
	};
}

} // namespace

const std::vector<case_def> &case_table()
{
	static const std::vector<case_def> table = [] {
		std::vector<case_def> all;
		for (auto part : {abi_and_export_cases(), import_cases(), lifetime_cases()})
			all.insert(all.end(), part.begin(), part.end());
		return all;
	}();
	return table;
}

const std::vector<fault_def> &fault_table()
{
	static const std::vector<fault_def> table = {
		{UALINK_SIM_FAULT_FLAGS_UNCHECKED, "flags-unchecked", "unknown flags accepted",
		 "nonzero-flags-rejected"},
		{UALINK_SIM_FAULT_LOW_HALF_MATCH, "low-half-match",
		 "a re-import is matched by handle_lo alone", "import-forged-refused"},
		{UALINK_SIM_FAULT_SEQUENTIAL_HANDLES, "sequential-handles", "handles are a counter",
		 "export-unpredictable"},
		{UALINK_SIM_FAULT_NO_REVOKE_ON_CLOSE, "no-revoke-on-close",
		 "the handle survives the last GEM handle close", "last-close-revokes"},
		{UALINK_SIM_FAULT_GTT_EXPORT, "gtt-export", "a GTT-only BO can be exported", "export-non-vram"},
		{UALINK_SIM_FAULT_NPA_LEAK, "npa-leak", "the import output carries the NPA", "no-npa-in-output"},
		{UALINK_SIM_FAULT_NO_IMPORT_PIN, "no-import-pin", "an import does not pin the exporter's BO",
		 "exporter-pinned-while-imported"},
		{UALINK_SIM_FAULT_NO_PEER_CLEANUP, "no-peer-cleanup",
		 "a node reset or offline leaves its peers' references", "node-reset-cleans-peers"},
		{UALINK_SIM_FAULT_STATE_AFTER_OP, "state-after-op", "accel_state checked after op and flags",
		 "inactive-state-first"},
		{UALINK_SIM_FAULT_REIMPORT_NEW_OBJECT, "reimport-new-object",
		 "every import makes a new object", "double-import-same-object"},
		{UALINK_SIM_FAULT_EXPORT_NOT_IDEMPOTENT, "export-not-idempotent",
		 "every export makes a new handle", "export-idempotent"},
		{UALINK_SIM_FAULT_GEM_HANDLE_WIDE, "gem-handle-wide",
		 "export reads gem_handle as 64 bits (stale union bytes matter)", "union-aliasing"},
		{UALINK_SIM_FAULT_LOCAL_LOW_HALF_MATCH, "local-low-half-match",
		 "an import on the exporter itself is matched by handle_lo alone", "import-forged-refused"},
		{UALINK_SIM_FAULT_PEER_FLAGS_UNCHECKED, "peer-flags-unchecked",
		 "unknown flags accepted on an import on a peer", "nonzero-flags-rejected"},
		{UALINK_SIM_FAULT_FIRST_IMPORT_LOW_HALF, "first-import-low-half",
		 "a peer's first import is matched by handle_lo alone", "import-forged-refused"},
		{UALINK_SIM_FAULT_PRIMARY_NO_AUTH, "primary-no-auth",
		 "an unauthenticated primary-node client may export and import", "primary-node-auth"},
		{UALINK_SIM_FAULT_LOCAL_IMPORT_REVOKED, "local-import-revoked",
		 "an import on the exporter still finds a revoked handle", "last-close-revokes"},
	};
	return table;
}

int64_t case_def::want(std::string_view key) const
{
	for (const auto &e : expect)
		if (e.key == key)
			return e.value;
	throw std::logic_error("case table: " + id() + " has no expected value '" + std::string(key) + "'");
}

const case_def &case_by_id(const std::string &id)
{
	return row_by_id(case_table(), id, "UALink");
}

std::string rc_name(int rc)
{
	return errno_name(rc < 0 ? -rc : rc);
}

// pod_view

const accel &pod_view::exporter() const
{
	if (found.accels.empty())
		throw unmet_need("no UALink accelerator here: no amdgpu render node with "
				 "<dev>/ualink/accel_id and no ualink_sim (modprobe drm_shmem_helper; "
				 "insmod ualink_sim.ko)");
	return found.accels.front();
}

size_t pod_view::remote_count() const
{
	const accel &a = exporter();
	const auto local = a.local_accels();
	const auto members = a.pod_members();
	size_t n = 0;
	for (const auto &b : found.accels)
		if (&b != &a && std::find(local.begin(), local.end(), b.id()) == local.end() &&
		    std::find(members.begin(), members.end(), b.id()) != members.end())
			n++;
	return n;
}

const accel &pod_view::remote(size_t n) const
{
	const accel &a = exporter();
	const auto local = a.local_accels();
	const auto members = a.pod_members();
	for (const auto &b : found.accels) {
		if (&b == &a || std::find(local.begin(), local.end(), b.id()) != local.end() ||
		    std::find(members.begin(), members.end(), b.id()) == members.end())
			continue;
		if (!n--)
			return b;
	}
	std::string ids;
	for (const auto &b : found.accels)
		ids += (ids.empty() ? "" : ",") + std::to_string(b.id());
	throw unmet_need("needs an importer outside accelerator " + std::to_string(a.id()) +
			 "'s node (accelerators here: " + ids + "; local to it: " +
			 std::to_string(local.size()) +
			 "): local peers import through amdgpu's local path, without NPA");
}

// case_context

bool case_context::expect_rc(const std::string &what, std::string_view key, int rc)
{
	const int64_t want = def.want(key);
	const bool ok = (want == 0 && rc == 0) || (want != 0 && rc == -want);
	checks_.push_back({what, rc_name(int(want)), rc_name(rc), ok});
	return ok;
}

bool case_context::expect_value(const std::string &what, std::string_view key, int64_t got)
{
	const int64_t want = def.want(key);
	auto show = [](int64_t v) { return v > 4096 ? hex(uint64_t(v)) : std::to_string(v); };
	checks_.push_back({what, show(want), show(got), want == got});
	return want == got;
}

bool case_context::expect(const std::string &what, bool ok, const std::string &want, const std::string &got)
{
	checks_.push_back({what, want, got, ok});
	return ok;
}

json case_context::observation() const
{
	json checks = json::array();
	size_t failed = 0;
	const check *first_failed = nullptr;
	for (const auto &k : checks_) {
		checks.push_back({{"what", k.what}, {"want", k.want}, {"got", k.got}, {"ok", k.ok}});
		if (!k.ok && !failed++)
			first_failed = &k;
	}
	std::string s = summary;
	if (first_failed)
		s = first_failed->what + ": " + first_failed->got;
	else if (s.empty())
		s = std::to_string(checks_.size()) + (checks_.size() == 1 ? " check ok" : " checks ok");
	json o = {{"summary", s}, {"checks", checks}, {"facts", facts}};
	if (latency_ns)
		o["latency_ns"] = *latency_ns;
	return o;
}

// run and judge

json run_case(const case_def &def)
{
	pod_view pod{def.needs & needs_device ? discover() : discovery{}};
	if (def.needs & needs_device) {
		const accel &a = pod.exporter();
		if (a.accel_state() != "active")
			throw unmet_need("accelerator " + std::to_string(a.id()) + " is not active (accel_state '" +
					 a.accel_state() + "')");
		if (def.needs & needs_model)
			a.require_model("hooks");
		if (def.needs & needs_remote)
			pod.remote();
	}
	case_context c(def, pod);
	def.run(c);
	json o = c.observation();
	if (!pod.empty()) {
		o["driver"] = pod.exporter().driver();
		o["exporter"] = pod.exporter().id();
	}
	return {{"observation", o}};
}

case_record judge_case(const case_def &def, const json &observation)
{
	std::vector<std::string> failed;
	const json &checks = observation.at("checks");
	for (const auto &k : checks)
		if (!k.at("ok").get<bool>())
			failed.push_back(k.at("what").get<std::string>() + ": want " +
					 k.at("want").get<std::string>() + ", got " + k.at("got").get<std::string>());
	verdict v = verdict::pass;
	std::string reason;
	if (checks.empty()) {
		v = verdict::error;
		reason = "the case made no check";
	} else if (!failed.empty()) {
		v = verdict::fail;
		for (const auto &f : failed)
			reason += (reason.empty() ? "" : "; ") + f;
	}
	case_record r = not_run_case(def, v, reason);
	r.observed = observation;
	if (observation.contains("latency_ns"))
		r.latency_ns = observation["latency_ns"].get<int64_t>();
	return r;
}

case_record not_run_case(const case_def &def, verdict v, const std::string &reason)
{
	json expect = json::object();
	for (const auto &e : def.expect)
		expect[std::string(e.key)] = e.value;
	case_record r;
	r.id = def.id();
	r.name = def.name;
	r.details = {{"source", std::string(def.checks)}};
	r.expected = {{"summary", std::string(def.expected)}, {"values", expect}};
	r.outcome = v;
	r.reason = reason;
	return r;
}

} // namespace pinmatrix::ualink
