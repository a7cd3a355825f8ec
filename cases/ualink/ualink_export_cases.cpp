// SPDX-License-Identifier: GPL-2.0
// The uapi and what export and the ioctl itself promise: the layout, the
// handle (same, distinct, named, unguessable), refusals of bad input, the
// accelerator's state, the aliasing of in and out.

#include "ualink_bodies.hpp"

#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <span>

#include "byte_pattern.hpp"
#include "suite.hpp"
#include "sys_error.hpp"
#include "text.hpp"
#include "ualink_case_kit.hpp"

namespace pinmatrix::ualink {

using nlohmann::json;

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
	const int64_t t0 = monotonic_raw_ns();
	const int rc1 = a.try_export(bo.get(), first);
	const int64_t t1 = monotonic_raw_ns();
	c.expect_rc("first export", "export", rc1);
	std::vector<int64_t> repeat;
	bool same = true;
	for (int i = 0; i < 16; i++) {
		const int64_t r0 = monotonic_raw_ns();
		const int rc = a.try_export(bo.get(), again);
		repeat.push_back(monotonic_raw_ns() - r0);
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
	std::vector<std::string> ids;
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
		ids.push_back(std::to_string(h.accel_id()));
	}
	c.summary = "low bits = accel ids " + join(ids, ",");
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

namespace {

// Every state of amdgpu's enum amdgpu_ualink_accel_state but active.
constexpr const char *inactive_states[] = {"unconfigured", "ppod_configured", "vpod_configured", "ready", "error"};

// While a is in `state`: every request, good or bad, is EOPNOTSUPP.
void refused_in_state(case_context &c, const accel &a, const std::string &state, uint32_t gem, const handle128 &h)
{
	handle128 out;
	unique_fd fd;
	state_guard offline(a, state);
	const std::string in = " (" + state + ")";
	c.expect_rc("export of a valid BO" + in, "inactive", a.try_export(gem, out));
	drm_amdgpu_ualink_handle arg{};
	arg.in.op = 7;
	c.expect_rc("unknown op 7" + in, "inactive", a.ualink_ioctl(arg));
	c.expect_rc("flags 0x1" + in, "inactive", a.try_export(gem, out, 1));
	c.expect_rc("GEM handle 0" + in, "inactive", a.try_export(0, out));
	c.expect_rc("import of a handle" + in, "inactive", a.try_import(h, fd));
	c.expect_rc("import of accel id 1000" + in, "inactive", a.try_import(forged_handle(1000), fd));
}

} // namespace

void inactive_state_first(case_context &c)
{
	const accel &a = c.pod.exporter();
	a.require_model("writable accel_state");
	auto bo = a.create_bo(4096, vram);
	const handle128 h = a.export_bo(bo.get());
	for (const char *state : inactive_states)
		refused_in_state(c, a, state, bo.get(), h);
	handle128 out;
	c.expect_rc("export once active again", "active-again", a.try_export(bo.get(), out));
	c.summary = "EOPNOTSUPP x6 in each of " + std::to_string(std::size(inactive_states)) + " states";
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

// ---------------------------------------------------------------------------
// Refused calls: their argument as sent, nothing left behind

namespace {

size_t open_fds()
{
	size_t n = 0;
	for ([[maybe_unused]] const auto &e : std::filesystem::directory_iterator("/proc/self/fd"))
		n++;
	return n;
}

// One refused call: its argument bytes, the pod's counts and this
// process's fds before and after, each held against "as before".
struct refusal {
	std::string what;
	std::string_view key;	// the table's errno
	const accel *on;
	drm_amdgpu_ualink_handle arg;
};

void check_refusal(case_context &c, const accel &counted, const refusal &r)
{
	const json before = counts(counted.stats());
	const size_t fds = open_fds();
	drm_amdgpu_ualink_handle arg = r.arg;
	const int rc = r.on->ualink_ioctl(arg);
	unique_fd accepted;	// an import that should have been refused: closed
	if (rc == 0 && r.arg.in.op == DRM_AMDGPU_UALINK_HANDLE_OP_IMPORT)
		accepted = unique_fd(int(arg.out.import_dmabuf_handle));
	c.expect_rc(r.what, r.key, rc);
	const auto *sent = reinterpret_cast<const uint8_t *>(&r.arg);
	const auto *back = reinterpret_cast<const uint8_t *>(&arg);
	const size_t at = size_t(std::mismatch(sent, sent + sizeof(arg), back).first - sent);
	const bool same = at == sizeof(arg);
	c.expect(r.what + ": the argument comes back as sent", same, "24 bytes as sent",
		 same ? "as sent" : "byte " + std::to_string(at) + " changed");
	const json after = settled_counts(counted, before);
	c.expect(r.what + ": the pod's counts as before", after == before, before.dump(), after.dump());
	const size_t fds_after = open_fds();
	c.expect(r.what + ": no new fd", fds_after == fds, std::to_string(fds), std::to_string(fds_after));
}

// An export's argument with every byte export does not read set: a
// refusal must give those back too.
drm_amdgpu_ualink_handle export_arg(uint32_t gem, uint32_t op = DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT,
				    uint32_t flags = 0)
{
	drm_amdgpu_ualink_handle arg;
	std::memset(&arg, 0x5a, sizeof(arg));
	arg.in.op = op;
	arg.in.flags = flags;
	arg.in.gem_handle = gem;
	return arg;
}

// An accel id that is no member of the pod, or nullopt.
std::optional<uint32_t> outside_the_pod(const accel &a)
{
	const auto members = a.pod_members();
	for (uint32_t id = 0; id < AMDGPU_UALINK_ACCEL_MAX_IDS; id++)
		if (std::find(members.begin(), members.end(), id) == members.end())
			return id;
	return std::nullopt;
}

} // namespace

void refused_calls_change_nothing(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	a.require_model("the pod's counts");
	auto bo = a.create_bo(4096, vram);
	auto gtt_bo = a.create_bo(4096, gtt);
	const handle128 h = a.export_bo(bo.get());
	unique_fd legit = b.import(h);	// the re-import path from here on
	std::vector<refusal> calls = {
		{"export with op 7", "op", &a, export_arg(bo.get(), 7)},
		{"export with flags 0x1", "flags", &a, export_arg(bo.get(), DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT, 1)},
		{"export of GEM handle 0", "gem", &a, export_arg(0)},
		{"export of a GTT-only BO", "gtt", &a, export_arg(gtt_bo.get())},
		{"import of a handle nobody exported", "forged", &b, import_request(forged_handle(a.id()))},
		{"re-import with a wrong handle_hi", "forged", &b, import_request({h.lo, h.hi ^ 1})},
		{"import on the exporter with a wrong handle_hi", "forged", &a, import_request({h.lo, h.hi ^ 1})},
		{"import of accel id 300", "accel-id", &b, import_request(forged_handle(300))},
	};
	if (const auto id = outside_the_pod(a))
		calls.push_back({"import from accel id " + std::to_string(*id) + " (not in the pod)", "unknown-peer", &b,
				 import_request(forged_handle(*id))});
	for (const auto &r : calls)
		check_refusal(c, a, r);
	// An exporter that does not answer: a third accelerator taken offline
	// for the call (the exporter's own state is the case's subject above).
	if (c.pod.remote_count() > 1) {
		const accel &off = c.pod.remote(1);
		auto other = off.create_bo(4096, vram);
		const handle128 gone = off.export_bo(other.get());
		state_guard offline(off, "ready");
		check_refusal(c, a, {"import from an exporter that is offline", "offline-exporter", &b, import_request(gone)});
	}
	c.summary = std::to_string(calls.size() + (c.pod.remote_count() > 1)) +
		    " refusals: argument as sent, counts and fds as before";
}

// ---------------------------------------------------------------------------
// Every bit of every input field

namespace {

// The refusals of one sweep that came back otherwise: "bit 44: ok".
struct sweep {
	std::string what;
	size_t tried = 0;
	std::vector<std::string> wrong;

	void note(int bit, int rc, int want)
	{
		tried++;
		if (rc != -want && !(want == 0 && rc == 0))
			wrong.push_back("bit " + std::to_string(bit) + ": " + rc_name(rc) + " (want " + rc_name(want) + ")");
	}
	void report(case_context &c) const
	{
		const std::string got = wrong.empty() ? "all " + std::to_string(tried)
						      : std::to_string(wrong.size()) + " of " + std::to_string(tried) +
								": " + join(std::span(wrong).first(std::min<size_t>(wrong.size(), 4)), "; ");
		c.expect(what, wrong.empty(), "all " + std::to_string(tried) + " refused with their errno", got);
	}
};

// The errno an import of h on `on` must get: an accel id outside the pod is
// ENODEV, one past AMDGPU_UALINK_ACCEL_MAX or a member that never exported
// it EINVAL.
int forged_errno(const case_context &c, const accel &on, const handle128 &h)
{
	const auto members = on.pod_members();
	const uint32_t id = h.accel_id();
	if (id < AMDGPU_UALINK_ACCEL_MAX_IDS && std::find(members.begin(), members.end(), id) == members.end())
		return int(c.def.want("unknown-peer"));
	return int(c.def.want("forged"));
}

// Each of the 128 bits of h flipped, imported on `on`.
sweep handle_sweep(case_context &c, const accel &on, const handle128 &h, const std::string &what)
{
	sweep s{"each single-bit change of the exported handle imported " + what};
	for (int bit = 0; bit < 128; bit++) {
		handle128 f = h;
		(bit < 64 ? f.lo : f.hi) ^= 1ull << (bit % 64);
		unique_fd fd;
		s.note(bit, on.try_import(f, fd), forged_errno(c, on, f));
	}
	return s;
}

} // namespace

void input_bits_each_checked(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	// A file with one GEM handle: no flipped bit can name another.
	accel file = a.reopen();
	auto bo = file.create_bo(4096, vram);
	const handle128 h = file.export_bo(bo.get());

	sweep op{"op with one bit set above bit 0 (1 is import)"};
	for (int bit = 1; bit < 32; bit++) {
		auto arg = export_arg(bo.get(), 1u << bit);
		op.note(bit, file.ualink_ioctl(arg), int(c.def.want("op")));
	}
	sweep flags_export{"export with each one of the 32 flag bits"}, flags_import{"import on a peer with each flag bit"};
	for (int bit = 0; bit < 32; bit++) {
		handle128 out;
		flags_export.note(bit, file.try_export(bo.get(), out, 1u << bit), int(c.def.want("flags")));
		unique_fd fd;
		flags_import.note(bit, b.try_import(h, fd, 1u << bit), int(c.def.want("flags")));
	}
	sweep gem{"export of the GEM handle with one bit flipped"};
	for (int bit = 0; bit < 32; bit++) {
		handle128 out;
		gem.note(bit, file.try_export(bo.get() ^ (1u << bit), out), int(c.def.want("gem")));
	}
	std::vector<sweep> sweeps = {op, flags_export, flags_import, gem, handle_sweep(c, b, h, "on a peer before its import")};
	unique_fd legit;
	// A sweep that let a forged handle in may have made the real one unimportable.
	if (c.expect_rc("the exported handle itself on the peer", "legit", b.try_import(h, legit)))
		sweeps.push_back(handle_sweep(c, b, h, "on a peer after its import"));
	sweeps.push_back(handle_sweep(c, file, h, "on the exporter"));
	for (const auto &s : sweeps)
		s.report(c);
	c.summary = "op, flags, GEM handle and 3x128 handle bits: each refused";
}

} // namespace pinmatrix::ualink
