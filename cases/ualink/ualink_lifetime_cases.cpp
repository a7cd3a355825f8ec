// SPDX-License-Identifier: GPL-2.0
// Lifetimes: revoke at the last GEM handle close, pins while imported,
// node resets and offline peers, NPAs that stay in the kernel, and all of it
// racing.

#include "ualink_bodies.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <stdexcept>
#include <thread>

#include "byte_pattern.hpp"
#include "kernel_info.hpp"
#include "kernel_log.hpp"
#include "suite.hpp"
#include "sys_error.hpp"
#include "text.hpp"
#include "ualink_case_kit.hpp"

namespace pinmatrix::ualink {

using nlohmann::json;

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

namespace {

// The first number in text (hex with or without 0x, or decimal) that lies
// in one of ranges: "0x20000200000", or empty.
std::string npa_in_text(const std::string &text, const std::vector<std::pair<uint64_t, uint64_t>> &ranges)
{
	static const std::regex number("0[xX][0-9a-fA-F]+|[0-9a-fA-F]+");
	for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it) {
		const std::string tok = it->str();
		const bool prefixed = tok.size() > 2 && (tok[1] == 'x' || tok[1] == 'X');
		std::vector<uint64_t> values;
		try {
			values.push_back(std::stoull(prefixed ? tok.substr(2) : tok, nullptr, 16));
			if (!prefixed && tok.find_first_not_of("0123456789") == std::string::npos)
				values.push_back(std::stoull(tok, nullptr, 10));
		} catch (const std::exception &) {	// out of range: no NPA
			continue;
		}
		for (const uint64_t v : values)
			for (const auto &[lo, hi] : ranges)
				if (v >= lo && v < hi)
					return tok;
	}
	return "";
}

std::string read_link(const std::string &path)
{
	char buf[4096];
	const ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
	return n < 0 ? "" : std::string(buf, size_t(n));
}

// Where else the kernel shows an imported object to user space: the
// dma-buf's name (readlink of its fd), fdinfo of it and of the importer's
// DRM file, its sysfs entry (CONFIG_DMABUF_SYSFS_STATS) and what the kernel
// logged since the case began.
std::vector<std::pair<std::string, std::string>> npa_channels(int dmabuf_fd, const accel &importer,
							      kernel_log_cursor *klog)
{
	const std::string fd = std::to_string(dmabuf_fd);
	std::vector<std::pair<std::string, std::string>> ch = {
		{"readlink of the dma-buf fd", read_link("/proc/self/fd/" + fd)},
		{"fdinfo of the dma-buf", read_text_file("/proc/self/fdinfo/" + fd)},
		{"fdinfo of the importer's DRM file", read_text_file("/proc/self/fdinfo/" + std::to_string(importer.fd()))},
	};
	const std::string sysfs = "/sys/kernel/dmabuf/buffers/" + std::to_string(identify(dmabuf_fd).ino);
	if (std::filesystem::exists(sysfs))
		ch.push_back({"sysfs " + sysfs, read_text_file(sysfs + "/exporter_name") + read_text_file(sysfs + "/size")});
	if (klog)
		ch.push_back({"the kernel log", join(klog->new_records(), "\n")});
	return ch;
}

} // namespace

void no_npa_in_output(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	auto bo = a.create_bo(bo_size, vram);
	std::optional<kernel_log_cursor> klog;
	try {
		klog.emplace();
	} catch (const std::system_error &e) {
		c.facts["kernel_log"] = std::string("not read: ") + e.what();
		c.undecided("no NPA in the kernel log", std::string("the kernel log could not be read: ") + e.what());
	}
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
		const auto channels = npa_channels(fd.get(), b, klog ? &*klog : nullptr);
		for (const auto &[where, text] : channels) {
			const std::string npa = npa_in_text(text, ranges);
			c.expect("no NPA in " + where, npa.empty(), "none", npa.empty() ? "none" : npa);
		}
		c.facts["channels"] = channels.size();
	} else {
		c.unmet("no output word in an NPA range",
			"the NPA ranges are read from ualink_sim's debugfs; " + b.driver() + " has none to compare with");
	}
	c.summary = "no NPA in " + std::to_string(outputs.size()) + " outputs and the kernel's other channels";
}

namespace {
// The stress case's tallies, shared by its threads.
struct stress_tally {
	std::atomic<bool> done{false};
	std::atomic<uint64_t> ops{0}, resets{0};
	std::mutex errors_lock;
	std::map<std::string, uint64_t> errors;
	std::string reset_error;	// the first reset that failed, if any

	void note(int rc)
	{
		if (!rc)
			return;
		std::lock_guard<std::mutex> g(errors_lock);
		errors[rc_name(rc)]++;
	}
};
} // namespace

namespace {
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
} // namespace

namespace {
// The workers, and one thread resetting victim until they are done; the
// seconds they took.
double run_stress(const std::vector<accel> &accels, const accel &victim, size_t threads, size_t iterations,
		  stress_tally &tally)
{
	std::vector<std::thread> pool;
	const int64_t t0 = monotonic_raw_ns();
	for (size_t t = 0; t < threads; t++)
		pool.emplace_back(stress_worker, std::cref(accels), t, iterations, std::ref(tally));
	// At least one reset, however soon the workers are done.
	std::thread resetter([&] {
		do {
			try {
				victim.reset_node();
				tally.resets++;
			} catch (const std::exception &e) {
				std::lock_guard<std::mutex> g(tally.errors_lock);
				if (tally.reset_error.empty())
					tally.reset_error = e.what();
			}
			usleep(2000);
		} while (!tally.done);
	});
	for (auto &t : pool)
		t.join();
	tally.done = true;
	resetter.join();
	return double(monotonic_raw_ns() - t0) / 1e9;
}
} // namespace

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
	// Counts back after nothing ran, or with no reset among it, is no
	// proof that the exchanges and resets leak nothing.
	if (!tally.ops)
		c.undecided("the stress", "no iteration got past its export (errors: " + json(tally.errors).dump() + ")");
	if (!tally.resets) {
		c.undecided("the stress under node resets", "no reset of accelerator " +
								   std::to_string(accels.back().id()) + " succeeded (" +
								   tally.reset_error + ")");
	}
	c.facts["threads"] = threads;
	c.facts["iterations"] = iterations;
	c.facts["operations"] = tally.ops.load();
	c.facts["resets"] = tally.resets.load();
	c.facts["errors"] = tally.errors;
	c.facts["seconds"] = seconds;
	c.summary = std::to_string(tally.ops.load()) + " ops, " + std::to_string(tally.resets.load()) +
		    " resets, counts back";
}

// ---------------------------------------------------------------------------
// The exporting file and process go; another holds a GEM handle

namespace {

// b's remote load through its handle of the import: 0 or -errno.
int load_through(const accel &b, uint32_t gem)
{
	std::vector<std::byte> buf(512);
	return b.try_remote_access(gem, false, 0, buf);
}

// Another GEM handle of the BO behind h, in `file` (the local import's
// dma-buf, PRIME-imported): the BO's handle count then counts it.
struct held_handle {
	unique_fd dmabuf;
	gem_handle gem;
};

held_handle hold_through_local_import(const accel &file, const handle128 &h)
{
	held_handle held;
	held.dmabuf = file.import(h);
	held.gem = file.prime_to_handle(held.dmabuf.get());
	return held;
}

// The export survives its exporter while `holder` keeps a GEM handle of the
// BO; then the holder lets go and it is revoked.
void outlives_then_revoked(case_context &c, const std::string &how, const accel &b, const accel &other,
			   const handle128 &h, held_handle &holder, uint32_t bh)
{
	c.expect_rc("remote load after " + how, "access", load_through(b, bh));
	unique_fd again;
	c.expect_rc("import on another peer after " + how, "import", other.try_import(h, again));
	holder = {};
	c.expect_rc("remote load once the last GEM handle (another file) closed", "access-after-revoke",
		    load_through(b, bh));
}

// A child that exports a BO of its own file, says the handle on a pipe and
// waits until killed.
pid_t exporter_process(const accel &a, handle128 &h)
{
	auto [pid, from_child] = fork_piped([&](int to_parent) {
		accel mine = a.reopen();
		auto bo = mine.create_bo(bo_size, vram);
		const handle128 out = mine.export_bo(bo.get());
		if (write(to_parent, &out, sizeof(out)) != sizeof(out))
			_exit(3);
		for (;;)
			pause();
	});
	if (read(from_child.get(), &h, sizeof(h)) != sizeof(h)) {
		int status;
		waitpid(pid, &status, 0);
		throw std::runtime_error("the exporting child process said no handle");
	}
	return pid;
}

} // namespace

void handle_outlives_its_exporter_file(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	const accel &other = c.pod.remote_count() > 1 ? c.pod.remote(1) : b;
	a.require_model("remote loads");
	const json base = counts(a.stats());
	{
		// The exporting file closes; a second file of this process holds a handle.
		std::optional<accel> exporting = a.reopen();
		auto bo = exporting->create_bo(bo_size, vram);
		const handle128 h = exporting->export_bo(bo.get());
		accel second = a.reopen();
		held_handle holder = hold_through_local_import(second, h);
		auto fd = b.import(h);
		auto bh = b.prime_to_handle(fd.get());
		bo.reset();
		exporting.reset();
		outlives_then_revoked(c, "the exporting file closed", b, other, h, holder, bh.get());
	}
	{
		// The exporting process dies (SIGKILL); this one holds a handle.
		handle128 h;
		const pid_t pid = exporter_process(a, h);
		accel holding = a.reopen();
		held_handle holder = hold_through_local_import(holding, h);
		auto fd = b.import(h);
		auto bh = b.prime_to_handle(fd.get());
		kill(pid, SIGKILL);
		int status;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		outlives_then_revoked(c, "the exporting process was killed", b, other, h, holder, bh.get());
	}
	const json end = settled_counts(a, base);
	c.expect("every count back to where the case started", end == base, base.dump(), end.dump());
	c.summary = "export outlives its file and its process while another holds a GEM handle";
}

// ---------------------------------------------------------------------------
// One importer reset, the others keep theirs

void importer_reset_spares_others(case_context &c)
{
	const accel &a = c.pod.exporter();
	a.require_model("pin counts and node reset");
	if (c.pod.remote_count() < 2)
		throw unmet_need("needs two importers outside the exporter's node");
	const accel &b = c.pod.remote(0);
	const accel &d = c.pod.remote(1);
	auto bo = a.create_bo(bo_size, vram);
	const handle128 h = a.export_bo(bo.get());
	auto fd_b = b.import(h);
	auto bh = b.prime_to_handle(fd_b.get());
	auto fd_d = d.import(h);
	auto dh = d.prime_to_handle(fd_d.get());
	b.reset_node();
	c.expect_value("exporter's pins after one of two importers reset", "pins-after-one-reset",
		       a.info(bo.get()).pins);
	c.expect_rc("the other importer's load", "access", load_through(d, dh.get()));
	c.expect_rc("the reset importer's old object", "access-after-reset", load_through(b, bh.get()));
	c.expect_value("still exported", "still-exported", a.info(bo.get()).exported);
	c.summary = "one importer reset: its pin gone, the other's access and pin kept";
}

// ---------------------------------------------------------------------------
// An import lives as long as its users

void import_goes_with_its_last_user(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	a.require_model("pin and object counts");
	auto bo = a.create_bo(bo_size, vram);
	const handle128 h = a.export_bo(bo.get());
	const json exported = counts(a.stats());
	{
		auto fd = b.import(h);
		auto bh = b.prime_to_handle(fd.get());
		c.expect_value("exporter's pins with one importer", "pins-while-imported", a.info(bo.get()).pins);
		fd.reset();
		c.expect_value("... once its dma-buf fd closed (its GEM handle left)", "pins-while-imported",
			       a.info(bo.get()).pins);
	}	// its GEM handle closes: no user is left
	const json after = settled_counts(a, exported);
	c.expect("the import, its object and its pin gone with its last user (the BO still exported)",
		 after == exported, exported.dump(), after.dump());
	c.expect_value("exporter's pins once the importer's last user went", "pins-after-last-user",
		       a.info(bo.get()).pins);
	unique_fd again;
	c.expect_rc("import again", "import", b.try_import(h, again));
	c.summary = "the import goes with its last dma-buf fd and GEM handle";
}

// ---------------------------------------------------------------------------
// A dynamic attachment of an import, told of its revoke

namespace {

// GEM_INFO of gem on `on` once the revoke notice came, or after 2 s.
drm_ualink_sim_gem_info once_revoked(const accel &on, uint32_t gem)
{
	drm_ualink_sim_gem_info info = on.info(gem);
	for (int i = 0; i < 200 && !info.revoked; i++) {
		usleep(10'000);
		info = on.info(gem);
	}
	return info;
}

} // namespace

void dynamic_attach_revoked(case_context &c)
{
	const accel &a = c.pod.exporter();
	a.require_model("an accelerator that attaches to an import (GEM_INFO)");
	if (c.pod.remote_count() < 2)
		throw unmet_need("needs two accelerators outside the exporter's node: an importer, and one that "
				 "attaches to its import");
	const accel &b = c.pod.remote(0);
	const accel &d = c.pod.remote(1);
	const json base = counts(a.stats());
	{
		auto bo = a.create_bo(bo_size, vram);
		auto fd = b.import(a.export_bo(bo.get()));
		uint32_t raw = 0;
		if (!c.expect_rc("a third accelerator attaches to the import's dma-buf (PRIME import)", "attach",
				 d.try_prime_to_handle(fd.get(), raw)))
			return;
		gem_handle attached(d.fd(), raw);
		const auto before = d.info(attached.get());
		c.expect_value("its object is a dynamic attachment", "kind", before.kind);
		c.expect_value("mapped while the export lives", "mapped", before.pins);
		bo.reset();	// the exporter's last GEM handle: the UALink handle dies
		const auto after = once_revoked(d, attached.get());
		c.expect_value("revoke notices it received", "notices", after.moves);
		c.expect_value("mapped after the notice", "mapped-after-revoke", after.pins);
	}
	const json end = settled_counts(a, base);
	c.expect("every count back to where the case started", end == base, base.dump(), end.dump());
	c.summary = "attached dynamically; the revoke's notice came and it unmapped";
}

} // namespace pinmatrix::ualink
