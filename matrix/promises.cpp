// SPDX-License-Identifier: GPL-2.0
#include "promises.hpp"

#include <algorithm>

#include "ualink_sim.h"

namespace pinmatrix {

const char *name(contract c)
{
	return c == contract::pin ? "pin" : "ualink";
}

const char *name(mutant_kind k)
{
	return k == mutant_kind::model_fault ? "model fault bit" : "kernel patch";
}

std::string mutant::id() const
{
	return std::string(kind == mutant_kind::model_fault ? "model:" : "kernel:") + std::string(name);
}

namespace {

using enum contract;

// Sections of the incident write-up (shared/seeds/000_*.txt) are "seed 1,
// section N"; the UALink series (004_*.txt) is quoted by part: its uapi
// (PATCH 2/3), the posted ioctl, the v2 documentation (PATCH 3/3 v2), the
// review replies. A rule of the kernel the suite encodes is "kernel rule".
const std::vector<promise> pin_promises = {
	{"pin/case-a", pin, "seed 1, section 16.5",
	 "Case A: CMA page + no first pin -> RDMA migrates page -> registration succeeds",
	 {"A"}},
	{"pin/case-b", pin, "seed 1, sections 16.4 and 16.5",
	 "Case B: CMA page + first non-long-term pin -> migration blocked -> registration fails; "
	 "\"ibv_reg_mr() -> NULL, errno -> ENOMEM\"",
	 {"B"}},
	{"pin/case-c", pin, "seed 1, section 16.5",
	 "Case C: CMA page + first FOLL_LONGTERM pin -> first pin migrates page -> later registration succeeds",
	 {"C"}},
	{"pin/case-d", pin, "seed 1, section 16.5",
	 "Case D: ordinary page + first non-long-term pin -> no CMA migration required -> registration succeeds",
	 {"D"}},
	{"pin/resident-is-no-contract", pin, "seed 1, section 6",
	 "\"A resident page currently has physical backing. It may still be reclaimed, swapped, migrated, or "
	 "replaced later.\"",
	 {"A", "ordinary-none"}},
	{"pin/mlock-still-migrates", pin, "seed 1, section 6",
	 "\"It is not the same device-DMA contract as GUP pinning, and mlocked pages can participate in some "
	 "migration paths.\"",
	 {"movable-mlock", "cma-mlock", "ordinary-mlock", "race/mlock-batch-reg-mr"}},
	{"pin/reference-blocks-migration", pin, "seed 1, sections 6 and 11",
	 "\"A reference keeps the page object alive\"; \"The extra page references or pin count prevent the "
	 "migration code from freezing the page in the expected state.\"",
	 {"movable-gup-ref", "cma-gup-ref", "ordinary-gup-ref"}},
	{"pin/foll-pin-is-a-dma-pin", pin, "seed 1, section 6",
	 "\"Those wrappers set FOLL_PIN and account the page as DMA-pinned. ... This lets the VM recognize that "
	 "the page is participating in a device mapping and requires special treatment.\"",
	 {"fork/child-writes-private", "fork/device-write-stays-in-parent"}},
	{"pin/device-and-cpu-agree", pin, "seed 1, sections 1 and 8",
	 "\"If Linux replaces physical page P with page Q, it can update the CPU page table. It cannot silently "
	 "update every third-party device translation\"; fig. 4: \"3. CPU mappings now point at Q ... 5. pin Q "
	 "long-term\"",
	 {"A", "C", "fork/device-write-stays-in-parent", "pinner/rxe-odp"}},
	{"pin/registration-asks-longterm-and-write", pin, "seed 1, section 7",
	 "\"Linux RDMA core therefore begins ordinary userspace MR registration with: FOLL_LONGTERM and adds "
	 "FOLL_WRITE if the device can write the pages.\"",
	 {"A", "B", "backing/anon-read-only", "backing/file-shared-read-only", "backing/zero-page"}},
	{"pin/memlock-allowance", pin, "seed 1, sections 7 and 12",
	 "\"check locked-memory allowance\" (ib_umem_get()); \"memlock quota exceeded\" is one of the meanings of "
	 "MR ENOMEM",
	 {"registration/memlock-quota", "registration/memlock-zero"}},
	{"pin/enomem-told-apart", pin, "seed 1, sections 12 and 17",
	 "\"This is one of several meanings hidden behind MR ENOMEM ... long-term page placement could not be "
	 "established\"; \"A useful error message would have preserved the last one.\"",
	 {"registration/memlock-quota", "B"}},
	{"pin/weak-first-pin-stays", pin, "seed 1, section 9",
	 "\"CUDA/NVIDIA pins it with FOLL_PIN -> no long-term placement check -> page remains physically inside "
	 "CMA\"",
	 {"B", "movable-gup-ref", "cma-gup-ref"}},
	{"pin/failed-migration-is-enomem", pin, "seed 1, section 12",
	 "\"Linux reports that from the long-term GUP migration helper as -ENOMEM when migration does not "
	 "complete.\"",
	 {"B", "movable-gup-ref", "cma-gup-ref"}},
	{"pin/strongest-contract-first", pin, "seed 1, sections 13 and 19",
	 "\"the placement check runs while the page can still be moved\"; \"request FOLL_LONGTERM on the first "
	 "pin so Linux can relocate it\"",
	 {"C", "ordinary-foll-pin-longterm", "movable-foll-pin-longterm", "cma-foll-pin-longterm"}},
	{"pin/weak-pin-then-validate-fails", pin, "seed 1, sections 13 and 19",
	 "\"once the first pin holds this physical page, the later placement check can fail deterministically\"; "
	 "\"What cannot safely happen is: pin now under a weak placement contract, validate long-term placement "
	 "later\"",
	 {"B", "movable-gup-ref", "cma-gup-ref", "movable-foll-pin", "cma-foll-pin"}},
	{"pin/ordinary-needs-no-move", pin, "seed 1, sections 15 and 16.5",
	 "\"no CMA page -> no need to migrate before long-term pin -> first and second pins can agree on the same "
	 "ordinary page\"",
	 {"D", "ordinary-none", "ordinary-mlock", "ordinary-gup-ref", "ordinary-foll-pin-longterm", "ordinary-foll-pin",
	  "ordinary-io-uring", "ordinary-cudart-register", "cudart-host-alloc"}},
	{"pin/gpu-host-pin-by-its-contract", pin, "seed 1, section 14",
	 "\"R525/R535 public path: FOLL_PIN + maybe FOLL_WRITE\"; \"R555 public path: FOLL_PIN + FOLL_LONGTERM + "
	 "maybe FOLL_WRITE\": a GPU driver's host pin (--first-pin cuda, hip) is judged by the contract it was "
	 "seen to keep, and a long-term aware one moves the page at its own pin",
	 {"B", "movable-cudart-register", "cma-cudart-register"}},
	{"pin/stranded-pin-withholds-memory", pin, "seed 1, sections 3 and 4",
	 "\"CMA can reclaim the range only while its temporary occupants remain movable.\"; \"One immovable 4 KiB "
	 "page can spoil an otherwise free 1 GiB candidate.\" (the give-back check of each case)",
	 {"A", "B", "C", "movable-mlock", "cma-mlock", "movable-gup-ref", "cma-gup-ref", "pinner/udmabuf",
	  "pinner/iommufd-mock", "pinner/vdpa-sim", "pinner/vfio-type1"}},
	{"pin/no-success-in-place", pin, "seed 1, section 10; kernel rule 1aaf8c122918",
	 "\"The long-term GUP path cannot leave it there. It collects the unpinnable/movable page, drops the "
	 "temporary pin it took while inspecting the range, and attempts synchronous migration\"",
	 {"race/reg-mr-while-isolated", "race/reg-mr-same-buffer", "race/io-uring-same-buffer", "race/mixed-same-buffer",
	  "race/mlock-batch-reg-mr"}},
	{"pin/refusal-leaves-no-pin", pin, "kernel rule aa6f8b2593b5",
	 "a refused long-term pin leaves no pin behind: the page it could not move is free to move once the "
	 "pin that blocked it goes (the case's recovery)",
	 {"B", "movable-gup-ref", "cma-gup-ref"}},
	{"pin/refusal-returns", pin, "kernel rule (1aaf8c122918's infinite loop, reverted by 517f496e1e61)",
	 "a long-term pin whose migration fails returns its error: it does not retry forever (a case whose thread "
	 "still runs in the kernel, and only there, at its timeout FAILs; stuck anywhere else it is an ERROR)",
	 {"B", "movable-gup-ref", "cma-gup-ref", "race/reg-mr-same-buffer", "race/mixed-same-buffer",
	  "pinner/cma-heap"}},
	{"pin/every-gup-path", pin, "kernel rule (GUP-fast's folio_is_longterm_pinnable())",
	 "GUP-fast refuses to pin long-term a page that may not stay where it is and leaves it to the slow path, "
	 "which moves it first; each rule holds on both paths (a backing row's -slow-path twin reaches the slow "
	 "path alone)",
	 {"A", "movable-mlock", "cma-mlock", "C", "backing/memfd", "backing/memfd-slow-path",
	  "backing/file-shared-writable", "backing/file-shared-writable-slow-path", "backing/file-shared-writable-in-place",
	  "backing/file-shared-read-only", "backing/file-shared-read-only-slow-path", "backing/secretmem",
	  "backing/secretmem-slow-path"}},
	{"pin/lru-batch-drained", pin, "kernel rule 98c6d259319e, 33dfe9204f29",
	 "a page waiting in a per-CPU LRU or mlock batch holds an extra reference: the long-term pin drains the "
	 "batches before it migrates (a freshly faulted page is in one), and never succeeds with the page in place",
	 {"race/mlock-batch-reg-mr", "A", "C"}},
	{"pin/every-backing", pin, "seed 1, section 18",
	 "\"ZONE_MOVABLE, CMA, device memory, DAX, and filesystem-backed pages all carry rules that a long-term "
	 "pin must respect.\"",
	 {"backing/anon-thp", "backing/hugetlb-2m", "backing/hugetlb-1g-cma", "backing/memfd", "backing/memfd-slow-path",
	  "backing/file-shared-writable", "backing/file-shared-read-only", "backing/file-shared-read-only-slow-path",
	  "backing/unpopulated", "backing/zero-page"}},
	{"pin/gigantic-page-in-cma-refused", pin, "seed 1, section 4; kernel rule",
	 "\"What hugetlb_cma=6G creates\": a 1 GiB page of the CMA reserve has no gigantic page outside CMA to "
	 "move to, so its long-term pin is refused (ENOMEM), never taken in place",
	 {"backing/hugetlb-1g-cma"}},
	{"pin/dirty-tracked-file-refused", pin, "kernel rule (writable_file_mapping_allowed(), 6.5/6.6)",
	 "a writable long-term pin of a shared file mapping that needs dirty tracking is refused (-EFAULT), "
	 "by GUP-fast and the slow path alike",
	 {"backing/file-shared-writable", "backing/file-shared-writable-slow-path",
	  "backing/file-shared-writable-in-place"}},
	{"pin/secretmem-refused", pin, "kernel rule (memfd_secret)",
	 "a long-term pin of memfd_secret memory is refused (-EFAULT), by GUP-fast and the slow path alike",
	 {"backing/secretmem", "backing/secretmem-slow-path"}},
	{"pin/every-pinner", pin, "seed 1, sections 18 and 19",
	 "\"A page must pass its strongest lifetime and placement contract before any subsystem makes it "
	 "immovable.\"; \"Who pinned it? Through which API? ... Was FOLL_LONGTERM declared?\"",
	 {"pinner/udmabuf", "pinner/iommufd-mock", "pinner/vdpa-sim", "pinner/vfio-type1", "pinner/cma-heap",
	  "pinner/gup-test-over-2g"}},
	{"pin/any-size-in-one-call", pin, "kernel rule 94efde1d1539 (53ba78de064b's cap)",
	 "one long-term pin is taken whole whatever its size: a single pin_user_pages(FOLL_LONGTERM) call of more "
	 "than 2 GiB pins every page and moves those in restricted memory first (6.11 refused it with -ENOMEM)",
	 {"pinner/gup-test-over-2g"}},
	{"pin/odp-owns-invalidation", pin, "seed 1, section 18",
	 "\"Which device translation depends on it? Who owns invalidation?\": an on-demand-paging MR pins "
	 "nothing, and the device's accesses follow the page wherever it moves",
	 {"pinner/rxe-odp"}},
};

const std::vector<promise> ualink_promises = {
	{"ualink/abi-layout", ualink, "uapi (PATCH 2/3)",
	 "\"#define DRM_AMDGPU_UALINK_HANDLE 0x1B\"; \"union drm_amdgpu_ualink_handle { struct "
	 "drm_amdgpu_ualink_handle_in in; union drm_amdgpu_ualink_handle_out out; };\"",
	 {"ualink/abi-layout"}},
	{"ualink/op-export-or-import", ualink, "uapi (PATCH 2/3); posted ioctl",
	 "\"#define DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT 0\", \"#define DRM_AMDGPU_UALINK_HANDLE_OP_IMPORT 1\"; "
	 "\"default: r = -EINVAL;\"",
	 {"ualink/unknown-op", "ualink/input-bits-each-checked", "ualink/refused-calls-change-nothing"}},
	{"ualink/flags-reserved", ualink, "uapi (PATCH 2/3)",
	 "\"/* For future use, no flags defined so far */\" (a flag the ioctl accepts today can never get a "
	 "meaning)",
	 {"ualink/nonzero-flags-rejected", "ualink/input-bits-each-checked", "ualink/refused-calls-change-nothing"}},
	{"ualink/state-checked-first", ualink, "posted ioctl",
	 "\"if (adev->ualink.info->accel_state != AMDGPU_UALINK_ACCEL_STATE_ACTIVE) { ... return -EOPNOTSUPP; }\" "
	 "before anything else, in every state that is not active",
	 {"ualink/inactive-state-first"}},
	{"ualink/inputs-latched", ualink, "posted ioctl",
	 "\"The input and output members of the ioctl argument alias each other. Latch every input field before "
	 "invoking the handlers, and only write the output fields afterwards.\"",
	 {"ualink/union-aliasing"}},
	{"ualink/output-only-on-success", ualink, "posted ioctl",
	 "\"if (!r) { args->out.export_ualink_handle[0] = ...\"; \"if (!r) args->out.import_dmabuf_handle = fd;\": "
	 "a refused call writes no output",
	 {"ualink/refused-calls-change-nothing"}},
	{"ualink/refusal-leaves-nothing", ualink, "ioctl convention",
	 "a refused call leaves no object, import, pin, reference or file descriptor behind: every count is back "
	 "where it was",
	 {"ualink/refused-calls-change-nothing"}},
	{"ualink/gem-handle-of-the-caller", ualink, "uapi (PATCH 2/3); posted export",
	 "\"/* GEM handle of the BO to export */\", looked up in the caller's file: any other value is -ENOENT",
	 {"ualink/export-bad-gem-handle", "ualink/input-bits-each-checked", "ualink/refused-calls-change-nothing"}},
	{"ualink/vram-only", ualink, "posted amdgpu_ualink_export_handle()",
	 "\"Only VRAM BOs can be exported\" (a BO without VRAM in its preferred domains: -EOPNOTSUPP)",
	 {"ualink/export-non-vram", "ualink/refused-calls-change-nothing"}},
	{"ualink/export-same-handle", ualink, "v2 doc",
	 "\"Calling export on the same GEM handle always returns the same UALink handle.\"",
	 {"ualink/export-idempotent"}},
	{"ualink/export-unique-128", ualink, "v2 doc",
	 "\"The IOCTL returns a unique 128 bit handle which can be shared with the remote host.\"",
	 {"ualink/export-distinct"}},
	{"ualink/handle-names-its-exporter", ualink, "posted amdgpu_generate_ualink_handle()",
	 "\"Replace bottom 10 bits in handle_lo with accId\"; \"Don't generate/store a Handle with value 0\"",
	 {"ualink/export-accel-id"}},
	{"ualink/handle-unguessable", ualink, "v2 doc",
	 "\"Applications use opaque handles to represent remote memory.\" (a handle is a capability: it must not "
	 "be guessed from another)",
	 {"ualink/export-unpredictable"}},
	{"ualink/only-exported-handles-import", ualink, "v2 doc",
	 "\"Shared memory can only be accessed by a remote GPU if the memory was exported and the importer has "
	 "been authorized.\" (every bit of both halves decides)",
	 {"ualink/import-forged-refused", "ualink/input-bits-each-checked", "ualink/refused-calls-change-nothing"}},
	{"ualink/import-is-a-dmabuf-of-the-memory", ualink, "v2 doc; cover letter",
	 "\"The GEM object is then exported to the caller as a dma-buf.\"; \"it is direct loads/stores over the "
	 "fabric\"",
	 {"ualink/import-dmabuf-data"}},
	{"ualink/reimport-same-object", ualink, "v2 doc",
	 "\"If the memory has already been imported, it just returns a new reference to the existing GEM "
	 "object.\"",
	 {"ualink/double-import-same-object"}},
	{"ualink/local-import", ualink, "posted amdgpu_ualink_local_import()",
	 "an import on the exporter's own node gets the BO's own dma-buf (no NPA)", {"ualink/import-on-exporter"}},
	{"ualink/accel-id-range", ualink, "posted amdgpu_ualink_import_handle()",
	 "an accel id (handle_lo bits 9:0) >= AMDGPU_UALINK_ACCEL_MAX: -EINVAL",
	 {"ualink/import-accel-id-range", "ualink/refused-calls-change-nothing"}},
	{"ualink/unknown-peer", ualink, "posted amdgpu_ualink_import_handle()",
	 "an accel id that is no member of the pod: -ENODEV",
	 {"ualink/import-unknown-peer", "ualink/input-bits-each-checked", "ualink/refused-calls-change-nothing"}},
	{"ualink/exporter-must-answer", ualink, "v2 doc",
	 "\"If not, the importer queries the exporter to get the NPA address.\": an exporter that does not answer "
	 "(offline) fails the import (-ETIMEDOUT) and nothing of it stays",
	 {"ualink/refused-calls-change-nothing"}},
	{"ualink/render-clients-and-authenticated-masters", ualink, "posted ioctl table",
	 "\"DRM_IOCTL_DEF_DRV(AMDGPU_UALINK_HANDLE, amdgpu_gem_ualink_handle_ioctl, DRM_AUTH|DRM_RENDER_ALLOW)\": "
	 "any render-node client, unprivileged included; on the primary node only an authenticated one",
	 {"ualink/primary-node-auth", "ualink/unprivileged-client"}},
	{"ualink/not-cpu-accessible", ualink, "v2 doc",
	 "\"The remote memory is not CPU accessible.\"; \"Remote NPAs are managed like another device specific "
	 "TTM pool ... however they cannot be CPU mapped.\"",
	 {"ualink/import-mmap-refused"}},
	{"ualink/handle-dies-at-handle-count-zero", ualink, "review (Felix Kuehling); PATCH 1/3",
	 "\"the UALink handle is destroyed when the GEM handle count reaches 0\"; \"This callback is called when "
	 "the GEM handle count goes down to 0.\" (counted over every file and process, not the exporter's)",
	 {"ualink/last-close-revokes", "ualink/handle-outlives-its-exporter-file"}},
	{"ualink/revoke-removes-remote-access", ualink, "v2 doc",
	 "\"Remote TLB shootdowns from the exporter are used when the exported memory is freed in order to remove "
	 "access by remote GPUs.\"",
	 {"ualink/last-close-revokes"}},
	{"ualink/exported-memory-pinned", ualink, "review (Felix Kuehling); v2 doc",
	 "\"We ended up having to pin exported memory.\"; \"Exported memory is pinned. This is similar to how "
	 "dma-bufs in VRAM are pinned for P2P access.\"",
	 {"ualink/exporter-pinned-while-imported"}},
	{"ualink/import-lives-with-its-users", ualink, "v2 doc",
	 "\"it just returns a new reference to the existing GEM object\"; \"Exported memory is pinned. This is "
	 "similar to how dma-bufs in VRAM are pinned for P2P access.\": the import, the exporter's pin for it "
	 "and the driver's module reference go with the importer's last reference",
	 {"ualink/import-goes-with-its-last-user"}},
	{"ualink/peers-clean-up", ualink, "v2 doc",
	 "\"If a node goes offline or is reset, their peers will clean up any remaining refrences that are lost "
	 "when that happens.\" (those of that node, and no other's)",
	 {"ualink/node-reset-cleans-peers", "ualink/importer-reset-spares-others"}},
	{"ualink/npa-never-in-user-space", ualink, "review (Felix Kuehling); v2 doc",
	 "\"NPA addresses are never given to user mode.\"; \"NPA addresses are never exposed to user space.\" "
	 "(no output, fdinfo, dma-buf name or kernel log line)",
	 {"ualink/no-npa-in-output"}},
	{"ualink/dynamic-attachment-revocable", ualink, "v2 doc",
	 "\"The dma-buf is leveraged for dynamic attachment which provides the ability to revoke access when "
	 "necessary.\"",
	 {"ualink/dynamic-attach-revoked"}},
	{"ualink/no-kernel-bug-under-concurrency", ualink, "kernel rule",
	 "export, import, close and node reset racing: the kernel never warns or oopses, and nothing leaks",
	 {"ualink/stress-no-leak"}},
};

const std::vector<mutant> model_mutants = {
	{"flags-unchecked", mutant_kind::model_fault, UALINK_SIM_FAULT_FLAGS_UNCHECKED, {}, 0,
	 "unknown flags accepted", {"ualink/flags-reserved"},
	 {"ualink/nonzero-flags-rejected", "ualink/input-bits-each-checked", "ualink/refused-calls-change-nothing"}},
	{"low-half-match", mutant_kind::model_fault, UALINK_SIM_FAULT_LOW_HALF_MATCH, {}, 0,
	 "a re-import is matched by handle_lo alone", {"ualink/only-exported-handles-import"},
	 {"ualink/import-forged-refused", "ualink/input-bits-each-checked", "ualink/refused-calls-change-nothing"}},
	{"sequential-handles", mutant_kind::model_fault, UALINK_SIM_FAULT_SEQUENTIAL_HANDLES, {}, 0,
	 "handles are a counter", {"ualink/handle-unguessable"}, {"ualink/export-unpredictable"}},
	{"no-revoke-on-close", mutant_kind::model_fault, UALINK_SIM_FAULT_NO_REVOKE_ON_CLOSE, {}, 0,
	 "the handle survives the last GEM handle close",
	 {"ualink/handle-dies-at-handle-count-zero", "ualink/revoke-removes-remote-access"},
	 {"ualink/last-close-revokes", "ualink/handle-outlives-its-exporter-file"}},
	{"gtt-export", mutant_kind::model_fault, UALINK_SIM_FAULT_GTT_EXPORT, {}, 0,
	 "a GTT-only BO can be exported", {"ualink/vram-only"},
	 {"ualink/export-non-vram", "ualink/refused-calls-change-nothing"}},
	{"npa-leak", mutant_kind::model_fault, UALINK_SIM_FAULT_NPA_LEAK, {}, 0,
	 "the import output carries the NPA", {"ualink/npa-never-in-user-space"}, {"ualink/no-npa-in-output"}},
	{"no-import-pin", mutant_kind::model_fault, UALINK_SIM_FAULT_NO_IMPORT_PIN, {}, 0,
	 "an import does not pin the exporter's BO", {"ualink/exported-memory-pinned"},
	 {"ualink/exporter-pinned-while-imported"}},
	{"no-peer-cleanup", mutant_kind::model_fault, UALINK_SIM_FAULT_NO_PEER_CLEANUP, {}, 0,
	 "a node reset or offline leaves its peers' references", {"ualink/peers-clean-up"},
	 {"ualink/node-reset-cleans-peers"}},
	{"state-after-op", mutant_kind::model_fault, UALINK_SIM_FAULT_STATE_AFTER_OP, {}, 0,
	 "accel_state checked after op and flags", {"ualink/state-checked-first"}, {"ualink/inactive-state-first"}},
	{"reimport-new-object", mutant_kind::model_fault, UALINK_SIM_FAULT_REIMPORT_NEW_OBJECT, {}, 0,
	 "every import makes a new object", {"ualink/reimport-same-object"}, {"ualink/double-import-same-object"}},
	{"export-not-idempotent", mutant_kind::model_fault, UALINK_SIM_FAULT_EXPORT_NOT_IDEMPOTENT, {}, 0,
	 "every export makes a new handle", {"ualink/export-same-handle"}, {"ualink/export-idempotent"}},
	{"gem-handle-wide", mutant_kind::model_fault, UALINK_SIM_FAULT_GEM_HANDLE_WIDE, {}, 0,
	 "export reads gem_handle as 64 bits (stale union bytes matter)", {"ualink/inputs-latched"},
	 {"ualink/union-aliasing"}},
	{"local-low-half-match", mutant_kind::model_fault, UALINK_SIM_FAULT_LOCAL_LOW_HALF_MATCH, {}, 0,
	 "an import on the exporter itself is matched by handle_lo alone", {"ualink/only-exported-handles-import"},
	 {"ualink/import-forged-refused", "ualink/input-bits-each-checked", "ualink/refused-calls-change-nothing"}},
	{"peer-flags-unchecked", mutant_kind::model_fault, UALINK_SIM_FAULT_PEER_FLAGS_UNCHECKED, {}, 0,
	 "unknown flags accepted on an import on a peer", {"ualink/flags-reserved"},
	 {"ualink/nonzero-flags-rejected", "ualink/input-bits-each-checked"}},
	{"first-import-low-half", mutant_kind::model_fault, UALINK_SIM_FAULT_FIRST_IMPORT_LOW_HALF, {}, 0,
	 "a peer's first import is matched by handle_lo alone", {"ualink/only-exported-handles-import"},
	 {"ualink/import-forged-refused", "ualink/input-bits-each-checked"}},
	{"primary-no-auth", mutant_kind::model_fault, UALINK_SIM_FAULT_PRIMARY_NO_AUTH, {}, 0,
	 "an unauthenticated primary-node client may export and import",
	 {"ualink/render-clients-and-authenticated-masters"}, {"ualink/primary-node-auth"}},
	{"local-import-revoked", mutant_kind::model_fault, UALINK_SIM_FAULT_LOCAL_IMPORT_REVOKED, {}, 0,
	 "an import on the exporter still finds a revoked handle", {"ualink/handle-dies-at-handle-count-zero"},
	 {"ualink/last-close-revokes"}},
	{"output-on-error", mutant_kind::model_fault, UALINK_SIM_FAULT_OUTPUT_ON_ERROR, {}, 0,
	 "a refused call writes its output anyway", {"ualink/output-only-on-success"},
	 {"ualink/refused-calls-change-nothing"}},
	{"refused-import-pins", mutant_kind::model_fault, UALINK_SIM_FAULT_REFUSED_IMPORT_PINS, {}, 0,
	 "a refused re-import (wrong handle_hi) keeps a pin on the exporter's BO until the import goes",
	 {"ualink/refusal-leaves-nothing"}, {"ualink/refused-calls-change-nothing"}},
	{"handle-hi-byte-ignored", mutant_kind::model_fault, UALINK_SIM_FAULT_HANDLE_HI_BYTE_IGNORED, {}, 0,
	 "bits 40-47 of handle_hi are not compared", {"ualink/only-exported-handles-import"},
	 {"ualink/input-bits-each-checked"}},
	{"op-low-byte", mutant_kind::model_fault, UALINK_SIM_FAULT_OP_LOW_BYTE, {}, 0,
	 "op is decoded from its low byte", {"ualink/op-export-or-import"},
	 {"ualink/unknown-op", "ualink/input-bits-each-checked"}},
	{"gem-handle-low16", mutant_kind::model_fault, UALINK_SIM_FAULT_GEM_HANDLE_LOW16, {}, 0,
	 "export looks the GEM handle up by its low 16 bits", {"ualink/gem-handle-of-the-caller"},
	 {"ualink/input-bits-each-checked"}},
	{"state-ordered", mutant_kind::model_fault, UALINK_SIM_FAULT_STATE_ORDERED, {}, 0,
	 "\"not active\" tested as a state before ready: the error state passes", {"ualink/state-checked-first"},
	 {"ualink/inactive-state-first"}},
	{"revoke-on-exporter-file-close", mutant_kind::model_fault, UALINK_SIM_FAULT_REVOKE_ON_EXPORTER_FILE_CLOSE, {}, 0,
	 "the handle dies with the DRM file that exported it, whoever else holds a GEM handle",
	 {"ualink/handle-dies-at-handle-count-zero"}, {"ualink/handle-outlives-its-exporter-file"}},
	{"reset-drops-all-importers", mutant_kind::model_fault, UALINK_SIM_FAULT_RESET_DROPS_ALL_IMPORTERS, {}, 0,
	 "an importer's reset makes the exporter drop every importer of the handle", {"ualink/peers-clean-up"},
	 {"ualink/importer-reset-spares-others"}},
	{"npa-in-dmabuf-name", mutant_kind::model_fault, UALINK_SIM_FAULT_NPA_IN_DMABUF_NAME, {}, 0,
	 "the imported dma-buf is named after its NPA (fdinfo)", {"ualink/npa-never-in-user-space"},
	 {"ualink/no-npa-in-output"}},
	{"npa-in-kernel-log", mutant_kind::model_fault, UALINK_SIM_FAULT_NPA_IN_KERNEL_LOG, {}, 0,
	 "an import logs its NPA", {"ualink/npa-never-in-user-space"}, {"ualink/no-npa-in-output"}},
	{"root-only", mutant_kind::model_fault, UALINK_SIM_FAULT_ROOT_ONLY, {}, 0,
	 "the handle ioctl needs CAP_SYS_ADMIN (DRM_ROOT_ONLY)", {"ualink/render-clients-and-authenticated-masters"},
	 {"ualink/unprivileged-client"}},
	{"access-ignores-offset", mutant_kind::model_fault, UALINK_SIM_FAULT_ACCESS_IGNORES_OFFSET, {}, 0,
	 "a remote load or store lands at offset 0 of its page, whatever its offset in the page",
	 {"ualink/import-is-a-dmabuf-of-the-memory"}, {"ualink/import-dmabuf-data"}},
	{"import-outlives-users", mutant_kind::model_fault, UALINK_SIM_FAULT_IMPORT_OUTLIVES_USERS, {}, 0,
	 "an import keeps its object, and the exporter's pin, after its last user let go",
	 {"ualink/import-lives-with-its-users"}, {"ualink/import-goes-with-its-last-user"}},
	{"no-revoke-notice", mutant_kind::model_fault, UALINK_SIM_FAULT_NO_REVOKE_NOTICE, {}, 0,
	 "a revoked import tells no dynamic importer of its dma-buf", {"ualink/dynamic-attachment-revocable"},
	 {"ualink/dynamic-attach-revoked"}},
	{"constant-handle-hi", mutant_kind::model_fault, UALINK_SIM_FAULT_CONSTANT_HANDLE_HI, {}, 0,
	 "handle_hi is the same for every export of an accelerator",
	 {"ualink/export-unique-128", "ualink/handle-unguessable"},
	 {"ualink/export-distinct", "ualink/export-unpredictable"}},
	{"accel-id-not-in-handle", mutant_kind::model_fault, UALINK_SIM_FAULT_ACCEL_ID_NOT_IN_HANDLE, {}, 0,
	 "handle_lo's bits 9:0 are random, not the exporter's accel id", {"ualink/handle-names-its-exporter"},
	 {"ualink/export-accel-id"}},
	{"local-import-new-dmabuf", mutant_kind::model_fault, UALINK_SIM_FAULT_LOCAL_IMPORT_NEW_DMABUF, {}, 0,
	 "an import on the exporter makes a new dma-buf each time, not the BO's own", {"ualink/local-import"},
	 {"ualink/import-on-exporter"}},
	{"accel-id-range-enodev", mutant_kind::model_fault, UALINK_SIM_FAULT_ACCEL_ID_RANGE_ENODEV, {}, 0,
	 "an accel id past AMDGPU_UALINK_ACCEL_MAX is -ENODEV, not -EINVAL", {"ualink/accel-id-range"},
	 {"ualink/import-accel-id-range", "ualink/refused-calls-change-nothing"}},
	{"offline-exporter-einval", mutant_kind::model_fault, UALINK_SIM_FAULT_OFFLINE_EXPORTER_EINVAL, {}, 0,
	 "an import from an offline exporter is -EINVAL, not -ETIMEDOUT", {"ualink/exporter-must-answer"},
	 {"ualink/refused-calls-change-nothing"}},
	{"remote-cpu-mappable", mutant_kind::model_fault, UALINK_SIM_FAULT_REMOTE_CPU_MAPPABLE, {}, 0,
	 "an imported object can be CPU mapped", {"ualink/not-cpu-accessible"}, {"ualink/import-mmap-refused"}},
	{"unknown-peer-einval", mutant_kind::model_fault, UALINK_SIM_FAULT_UNKNOWN_PEER_EINVAL, {}, 0,
	 "an import from an accel id outside the pod is -EINVAL, not -ENODEV", {"ualink/unknown-peer"},
	 {"ualink/import-unknown-peer", "ualink/input-bits-each-checked", "ualink/refused-calls-change-nothing"}},
};

// The kernel's: the 2025 regression as upstream shaped it (the race suite's
// proof, matrix/regressions.toml), and the mutant kernel of each series
// (matrix/patches/mutants-SERIES.patch), one way of breaking the contract
// per value of pinmatrix_mutant (tools/run-mutants runs them all).
const std::vector<std::string_view> mutant_kernel = {"mutants-6.1.patch", "mutants-6.12.patch", "mutants-7.2.patch"};
// The series whose kernels have the rules 6.5 added (writable_file_mapping_allowed(),
// gup_fast_folio_allowed()).
const std::vector<std::string_view> mutant_kernel_since_6_5 = {"mutants-6.12.patch", "mutants-7.2.patch"};
// The series with iommufd (6.2 on).
const std::vector<std::string_view> mutant_kernel_with_iommufd = {"mutants-6.12.patch", "mutants-7.2.patch"};

const std::vector<mutant> kernel_mutants = {
	{"1aaf8c122918", mutant_kind::kernel_patch, 0, {"gup-longterm-success-in-place-1aaf8c122918.patch"}, 0,
	 "a long-term pin that could not isolate a page it had to move succeeds on the page in place "
	 "(stable 6.1.129-6.1.154)",
	 {"pin/no-success-in-place"},
	 {"race/reg-mr-while-isolated", "race/reg-mr-same-buffer", "race/io-uring-same-buffer", "race/mixed-same-buffer"}},
	{"success-in-place", mutant_kind::kernel_patch, 0, mutant_kernel, 1,
	 "a long-term pin that isolated none of the pages it must move succeeds with them in place "
	 "(1aaf8c122918's class)",
	 {"pin/no-success-in-place"},
	 {"race/reg-mr-while-isolated", "race/reg-mr-same-buffer", "race/io-uring-same-buffer", "race/mixed-same-buffer", "race/mlock-batch-reg-mr"}},
	{"no-lru-drain", mutant_kind::kernel_patch, 0, mutant_kernel, 2,
	 "the long-term pin never drains the per-CPU LRU batches before isolating (98c6d259319e, 33dfe9204f29): "
	 "6.1 retries forever, 6.12 refuses a freshly faulted page",
	 {"pin/lru-batch-drained", "pin/case-a", "pin/refusal-returns"},
	 {"A", "C", "race/reg-mr-same-buffer", "race/mixed-same-buffer"}},
	{"refused-pin-leaks", mutant_kind::kernel_patch, 0, mutant_kernel, 3,
	 "a refused long-term pin leaves a pin on each page it failed to move (aa6f8b2593b5)",
	 {"pin/refusal-leaves-no-pin"}, {"B", "movable-gup-ref", "cma-gup-ref"}},
	{"migration-errno", mutant_kind::kernel_patch, 0, mutant_kernel, 4, "a failed migration is -EFAULT, not -ENOMEM",
	 {"pin/failed-migration-is-enomem", "pin/case-b"}, {"B", "movable-gup-ref", "cma-gup-ref"}},
	{"endless-retry", mutant_kind::kernel_patch, 0, mutant_kernel, 5,
	 "a failed migration is retried forever, each pass unpinning and pinning again",
	 {"pin/refusal-returns", "pin/case-b"}, {"B", "movable-gup-ref", "cma-gup-ref"}},
	{"pinner-drops-longterm", mutant_kind::kernel_patch, 0, mutant_kernel, 6, "ib_umem_get() pins without FOLL_LONGTERM",
	 {"pin/registration-asks-longterm-and-write", "pin/case-a", "pin/case-b", "pin/weak-pin-then-validate-fails",
	  "pin/no-success-in-place", "pin/mlock-still-migrates"},
	 {"A", "B", "movable-mlock", "cma-mlock", "movable-gup-ref", "cma-gup-ref", "race/reg-mr-same-buffer",
	  "race/mixed-same-buffer", "race/mlock-batch-reg-mr"}},
	{"fast-path-pins-in-place", mutant_kind::kernel_patch, 0, mutant_kernel, 7,
	 "GUP-fast pins a page that may not be pinned long-term in place",
	 {"pin/every-gup-path", "pin/case-a", "pin/case-b", "pin/case-c", "pin/no-success-in-place",
	  "pin/mlock-still-migrates", "pin/reference-blocks-migration"},
	 {"A", "B", "C", "movable-mlock", "cma-mlock", "movable-gup-ref", "cma-gup-ref", "race/reg-mr-same-buffer",
	  "race/io-uring-same-buffer", "race/mixed-same-buffer", "race/mlock-batch-reg-mr"}},
	{"vfio-drops-longterm", mutant_kind::kernel_patch, 0, mutant_kernel, 10,
	 "VFIO type1 (vaddr_get_pfns()) pins a DMA mapping without FOLL_LONGTERM",
	 {"pin/every-pinner", "pin/stranded-pin-withholds-memory"}, {"pinner/vfio-type1"}},
	{"vdpa-drops-longterm", mutant_kind::kernel_patch, 0, mutant_kernel, 11,
	 "vhost-vdpa (vhost_vdpa_pa_map()) pins an IOTLB update without FOLL_LONGTERM",
	 {"pin/every-pinner", "pin/stranded-pin-withholds-memory"}, {"pinner/vdpa-sim"}},
	{"iommufd-drops-longterm", mutant_kind::kernel_patch, 0, mutant_kernel_with_iommufd, 12,
	 "iommufd (pfn_reader_user_init()) pins an IOAS mapping without FOLL_LONGTERM",
	 {"pin/every-pinner", "pin/stranded-pin-withholds-memory"}, {"pinner/iommufd-mock"}},
	{"one-call-size-cap", mutant_kind::kernel_patch, 0, mutant_kernel, 13,
	 "a long-term pin first allocates a folio pointer per page with kmalloc_array() (53ba78de064b, 6.11): one "
	 "call of more than 2 GiB is -ENOMEM",
	 {"pin/any-size-in-one-call"}, {"pinner/gup-test-over-2g"}},
	{"slow-path-pins-dirty-tracked-file", mutant_kind::kernel_patch, 0, mutant_kernel_since_6_5, 8,
	 "the slow path pins long-term a writable shared file mapping that needs dirty tracking "
	 "(writable_file_mapping_allowed() always true)",
	 {"pin/dirty-tracked-file-refused", "pin/every-gup-path"},
	 {"backing/file-shared-writable", "backing/file-shared-writable-slow-path",
	  "backing/file-shared-writable-in-place"}},
	{"fast-path-pins-dirty-tracked-file", mutant_kind::kernel_patch, 0, mutant_kernel_since_6_5, 9,
	 "GUP-fast alone pins long-term a writable file-backed folio; the slow path still refuses "
	 "(gup_fast_folio_allowed() never rejects a file-backed folio)",
	 {"pin/dirty-tracked-file-refused", "pin/every-gup-path"}, {"backing/file-shared-writable-in-place"}},
};

} // namespace

const std::vector<promise> &promise_table()
{
	static const std::vector<promise> all = [] {
		std::vector<promise> v = pin_promises;
		v.insert(v.end(), ualink_promises.begin(), ualink_promises.end());
		return v;
	}();
	return all;
}

const std::vector<mutant> &mutant_table()
{
	static const std::vector<mutant> all = [] {
		std::vector<mutant> v = model_mutants;
		v.insert(v.end(), kernel_mutants.begin(), kernel_mutants.end());
		return v;
	}();
	return all;
}

std::vector<const mutant *> proofs_of(const promise &p)
{
	std::vector<const mutant *> out;
	for (const auto &m : mutant_table()) {
		const bool breaks = std::find(m.breaks.begin(), m.breaks.end(), p.id) != m.breaks.end();
		const bool caught = std::any_of(m.caught_by.begin(), m.caught_by.end(), [&](std::string_view c) {
			return std::find(p.cases.begin(), p.cases.end(), c) != p.cases.end();
		});
		if (breaks && caught)
			out.push_back(&m);
	}
	return out;
}

} // namespace pinmatrix
