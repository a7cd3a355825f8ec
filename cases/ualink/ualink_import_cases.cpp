// SPDX-License-Identifier: GPL-2.0
// What import promises: the dma-buf and its data, one object per handle,
// the local import, who may import (forged handles, the primary node's
// authentication) and from where (accel ids, peers), no CPU mapping.

#include "ualink_bodies.hpp"

#include <linux/capability.h>
#include <linux/dma-buf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include "capability.hpp"
#include "byte_pattern.hpp"
#include "suite.hpp"
#include "sys_error.hpp"
#include "text.hpp"
#include "ualink_case_kit.hpp"

namespace pinmatrix::ualink {

using nlohmann::json;

void import_dmabuf_data(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	auto bo = make_cpu_bo(a, bo_size, vram, 1);
	const handle128 h = a.export_bo(bo.gem.get());

	unique_fd fd;
	const int64_t t0 = monotonic_raw_ns();
	const int rc = b.try_import(h, fd);
	const int64_t t1 = monotonic_raw_ns();
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
	// Offsets inside a page, and across one: where rxe's ODP copy once
	// dropped the offset (every access then lands at the page's start).
	auto odd = pattern(4, 3000);
	c.expect_rc("remote store of 3000 bytes at 6000 (across a page)", "access",
		    b.try_remote_access(bh.get(), true, 6000, odd));
	c.expect("the exporter sees them at 6000", bo.read(6000, odd.size()) == odd, "equal",
		 bytes_diff(odd, bo.read(6000, odd.size())));
	std::vector<std::byte> part(1000);
	c.expect_rc("remote load of 1000 bytes at 12388", "access", b.try_remote_access(bh.get(), false, 12388, part));
	c.expect("the importer reads the exporter's bytes at 12388", part == bo.read(12388, part.size()), "equal",
		 bytes_diff(bo.read(12388, part.size()), part));

	unique_fd again;
	const int64_t t2 = monotonic_raw_ns();
	c.expect_rc("import again", "import", b.try_import(h, again));
	const int64_t t3 = monotonic_raw_ns();

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
	const bool own = identify(fd.get()) == identify(bo.dmabuf.get());
	c.expect("it is the BO's own dma-buf (amdgpu's local import, no NPA)", own, "same inode as PRIME export",
		 "other");
	// PRIME import of another dma-buf of the same BO makes DRM warn
	// (drm_gem_prime_fd_to_handle()): the rest would only hurt the kernel.
	if (!own)
		return;
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

namespace {
// The primary node of an accelerator, opened twice: its DRM master, and a
// client the master has not authenticated.
struct primary_files {
	accel master;
	accel client;
};
} // namespace

namespace {
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
} // namespace

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

// ---------------------------------------------------------------------------
// A client with no privileges at all

namespace {

// CapEff of this process (/proc/self/status), "?" when unreadable.
std::string effective_caps()
{
	std::ifstream in("/proc/self/status");
	for (std::string line; std::getline(in, line);)
		if (line.rfind("CapEff:", 0) == 0)
			return trimmed(line.substr(line.find_first_not_of(" \t", 7)));
	return "?";
}

// In the unprivileged child: its own render-node files (opened before the
// drop, as a privilege-separating daemon opens its devices), then nobody;
// the rc of each call.
json unprivileged_calls(const accel &a, const accel &b, const handle128 &roots, uint32_t roots_gem)
{
	accel mine = a.reopen();
	accel peer = b.reopen();
	become_nobody();
	json r = {{"uid", getuid()}, {"cap_eff", effective_caps()}};
	gem_handle bo;
	r["create"] = mine.try_create_bo(4096, vram, bo);
	handle128 h;
	r["export"] = bo ? mine.try_export(bo.get(), h) : -EBADF;
	unique_fd own, theirs;
	r["import-own"] = r["export"] == 0 ? peer.try_import(h, own) : -EBADF;
	r["import-roots"] = peer.try_import(roots, theirs);
	r["import-is-dmabuf"] = theirs && is_dmabuf(theirs.get());
	handle128 x;
	r["export-roots-gem"] = bo.get() == roots_gem ? -EEXIST : mine.try_export(roots_gem, x);
	return r;
}

} // namespace

void unprivileged_client(case_context &c)
{
	const accel &a = c.pod.exporter();
	const accel &b = c.pod.remote();
	// Root's BO in a file of its own, its GEM handle past the child's first.
	accel roots_file = a.reopen();
	std::vector<gem_handle> bos;
	for (int i = 0; i < 3; i++)
		bos.push_back(roots_file.create_bo(4096, vram));
	const handle128 roots = roots_file.export_bo(bos.back().get());
	const json r = in_child_process([&] { return unprivileged_calls(a, b, roots, bos.back().get()); }, 30);
	c.facts["child"] = r;
	c.expect("the client runs as nobody with no capability", r["uid"] == 65534 && r["cap_eff"] == "0000000000000000",
		 "uid 65534, CapEff 0", "uid " + r["uid"].dump() + ", CapEff " + r["cap_eff"].get<std::string>());
	c.expect_rc("its BO created on the render node", "render", r["create"].get<int>());
	c.expect_rc("its export", "render", r["export"].get<int>());
	c.expect_rc("its import of its own handle on a peer", "render", r["import-own"].get<int>());
	c.expect_rc("its import of root's handle on a peer", "render", r["import-roots"].get<int>());
	c.expect("... a dma-buf", r["import-is-dmabuf"].get<bool>(), "dma-buf", "none");
	if (r["export-roots-gem"] != -EEXIST)
		c.expect_rc("its export of root's GEM handle number (not one of its file)", "foreign-gem",
			    r["export-roots-gem"].get<int>());
	c.summary = "nobody, no capability: export and import work; root's GEM handle is not its";
}

} // namespace pinmatrix::ualink
