// SPDX-License-Identifier: GPL-2.0
// The UALink suite's one table: each case with the sentence it checks, what
// it needs and the values its checks expect; and the model's fault bits
// (from the mutant table, matrix/promises.cpp) with the cases they must fail.
#include "ualink_cases.hpp"

#include <stdexcept>

#include "promises.hpp"
#include "suite.hpp"
#include "ualink_bodies.hpp"

namespace pinmatrix::ualink {

namespace {

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

// ---------------------------------------------------------------------------
// The table


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
		 "EOPNOTSUPP for every request in each of the 5 states but active", needs_device | needs_model,
		 {{"inactive", EOPNOTSUPP}, {"active-again", 0}}, inactive_state_first},
		{"union-aliasing",
		 "posted ioctl: \"The input and output members of the ioctl argument alias each other. Latch "
		 "every input field before invoking the handlers, and only write the output fields afterwards.\"",
		 "stale bytes ignored, same handle", needs_device, {{"export", 0}, {"import", 0}}, union_aliasing},
		{"refused-calls-change-nothing",
		 "posted ioctl: \"if (!r) { args->out.export_ualink_handle[0] = ...\" / \"if (!r) "
		 "args->out.import_dmabuf_handle = fd;\" (a refused call writes no output), and a refused call "
		 "leaves no object, import, pin or fd behind; v2 doc: \"the importer queries the exporter to get "
		 "the NPA address\" (an exporter that does not answer: -ETIMEDOUT)",
		 "each refusal with its errno; argument, counts and fds as before", needs_device | needs_remote | needs_model,
		 {{"op", EINVAL}, {"flags", EINVAL}, {"gem", ENOENT}, {"gtt", EOPNOTSUPP}, {"forged", EINVAL},
		  {"accel-id", EINVAL}, {"unknown-peer", ENODEV}, {"offline-exporter", ETIMEDOUT}},
		 refused_calls_change_nothing},
		{"input-bits-each-checked",
		 "every bit of every input field decides: op (uapi: 0 export, 1 import), flags (\"no flags defined "
		 "so far\"), the GEM handle (of the caller's file), both halves of the 128-bit handle (v2 doc: "
		 "\"only ... if the memory was exported and the importer has been authorized\")",
		 "each single-bit change refused with its errno", needs_device | needs_remote,
		 {{"op", EINVAL}, {"flags", EINVAL}, {"gem", ENOENT}, {"forged", EINVAL}, {"unknown-peer", ENODEV},
		  {"legit", 0}},
		 input_bits_each_checked},
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
		{"unprivileged-client",
		 "posted DRM_IOCTL_DEF_DRV(AMDGPU_UALINK_HANDLE, ..., DRM_AUTH|DRM_RENDER_ALLOW): a render-node "
		 "client needs no privilege (uid nobody, no capability, no group); a GEM handle is its file's",
		 "export and import work; root's GEM handle number is ENOENT", needs_device | needs_remote,
		 {{"render", 0}, {"foreign-gem", ENOENT}}, unprivileged_client},
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
		{"handle-outlives-its-exporter-file", doc_handle_count,
		 "alive after its exporting file closes and its exporting process dies while another holds a GEM "
		 "handle; revoked when that one goes",
		 needs_device | needs_remote | needs_model,
		 {{"access", 0}, {"import", 0}, {"access-after-revoke", ENOLINK}}, handle_outlives_its_exporter_file},
		{"node-reset-cleans-peers", doc_reset,
		 "importer reset: exporter unpins; exporter reset/offline: importers ENOLINK, handle EINVAL",
		 needs_device | needs_remote | needs_model,
		 {{"pins-after-importer-reset", 0}, {"still-exported", 1}, {"access-after-reset", ENOLINK},
		  {"import", 0}, {"import-after-reset", EINVAL}, {"exported-after-reset", 0}},
		 node_reset_cleans_peers},
		{"importer-reset-spares-others", doc_reset,
		 "of two importers one resets: its pin goes, the other keeps its access and pin",
		 needs_device | needs_remote | needs_model,
		 {{"pins-after-one-reset", 1}, {"access", 0}, {"access-after-reset", ENOLINK}, {"still-exported", 1}},
		 importer_reset_spares_others},
		{"import-goes-with-its-last-user",
		 "v2 doc: \"it just returns a new reference to the existing GEM object\" and \"Exported memory is "
		 "pinned. This is similar to how dma-bufs in VRAM are pinned for P2P access.\": the importer's "
		 "object is counted like any, and when its last reference goes, so do the import and the "
		 "exporter's pin for it",
		 "the import and its pin go with the importer's last dma-buf fd and GEM handle",
		 needs_device | needs_remote | needs_model,
		 {{"pins-while-imported", 1}, {"pins-after-last-user", 0}, {"import", 0}}, import_goes_with_its_last_user},
		{"dynamic-attach-revoked",
		 "v2 doc: \"The dma-buf is leveraged for dynamic attachment which provides the ability to revoke "
		 "access when necessary.\" (a dynamic importer gets move_notify / invalidate_mappings and unmaps)",
		 "a third accelerator attaches dynamically; at the revoke it is told and unmaps",
		 needs_device | needs_remote | needs_model,
		 {{"attach", 0}, {"kind", UALINK_SIM_GEM_KIND_ATTACHED}, {"mapped", 1}, {"notices", 1},
		  {"mapped-after-revoke", 0}},
		 dynamic_attach_revoked},
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
	static const std::vector<fault_def> table = [] {
		std::vector<fault_def> faults;
		for (const auto &m : mutant_table())
			if (m.kind == mutant_kind::model_fault)
				faults.push_back({m.bit, m.name, m.deviation, m.caught_by});
		return faults;
	}();
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

} // namespace pinmatrix::ualink
