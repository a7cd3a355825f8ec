/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * ualink_sim: the model-only ABI of the UALink reference model, a test
 * double for amdgpu (kmod/ualink_sim). Shared by the module and the C++
 * conformance cases (cases/ualink/).
 *
 * The UALink handle ioctl itself is amdgpu's (amdgpu_ualink.h, same number,
 * same layout). What is here exists only in the model: buffer creation
 * naming a domain, loads/stores by an importer over the simulated fabric,
 * introspection (pins, object counts) and the fault-injection bits that
 * turn on known deviations from the documented contract, so that the suite
 * can prove it catches each of them.
 *
 * Knobs outside ioctls:
 *   <dev>/ualink/accel_id            this accelerator's id in the pod (ro)
 *   <dev>/ualink/accel_state         "active" or not, as amdgpu's; writable
 *                                    here: leaving "active" takes the node
 *                                    offline and its peers clean up
 *   <dev>/ualink/local_accels        accelerators on the same node (ro)
 *   <dev>/ualink/vpod_active_accels  accelerators of the pod (ro)
 *   <dev>/ualink/reset               write 1: node reset, peers clean up
 *   debugfs ualink_sim/faults        UALINK_SIM_FAULT_* bitmask (rw, hex, 64
 *                                    bits; an unknown bit is refused)
 *   debugfs ualink_sim/npa           live NPA ranges, as only the kernel
 *                                    drivers see them (ro)
 *   /sys/module/ualink_sim/parameters/pin_limit_mib
 *                                    MiB that exports of the whole pod may
 *                                    pin together (rw, root; default at load
 *                                    an eighth of RAM)
 * where <dev> is /sys/class/drm/renderD<N>/device.
 *
 * Beyond amdgpu's contract (uapi/amdgpu_ualink.h), the model's UALink ioctl:
 *  - export: -ENOSPC when pinning the BO would take the pod's exports past
 *    pin_limit_mib (an exported BO stays pinned until its handle dies; any
 *    render-node user can export, so the pins are capped, not the users);
 *  - import: the dma-buf fd is installed only after DRM has copied the result
 *    out; -EFAULT there leaves no fd (and no new reference) behind;
 *  - import on the exporter: the BO's PRIME dma-buf; PRIME import of it in a
 *    file that has a GEM handle of the BO gives that handle back;
 *  - an import on a peer lives as long as its users: with the importer's
 *    last dma-buf fd and GEM handle of its object go the import, the
 *    exporter's pin for it and the module reference.
 */
#ifndef _UAPI_UALINK_SIM_H
#define _UAPI_UALINK_SIM_H

/* drm.h is include/uapi/drm/drm.h in the kernel, libdrm's in user space. */
#ifdef __KERNEL__
#include <drm/drm.h>
#else
#include <drm.h>
#endif

#if defined(__cplusplus)
extern "C" {
#endif

#define UALINK_SIM_DRIVER_NAME		"ualink_sim"

/* Model-only ioctls; 0x1B is amdgpu's DRM_AMDGPU_UALINK_HANDLE. */
#define DRM_UALINK_SIM_GEM_CREATE	0x00
#define DRM_UALINK_SIM_GEM_MMAP		0x01
#define DRM_UALINK_SIM_GEM_INFO		0x02
#define DRM_UALINK_SIM_GEM_EVICT	0x03
#define DRM_UALINK_SIM_REMOTE_ACCESS	0x04
#define DRM_UALINK_SIM_POD_STATS	0x05

/* Domains are amdgpu's values (AMDGPU_GEM_DOMAIN_GTT / _VRAM). */
#define UALINK_SIM_DOMAIN_GTT		0x2
#define UALINK_SIM_DOMAIN_VRAM		0x4

#define UALINK_SIM_BO_MAX_SIZE		(256ULL << 20)

/* A shmem-backed buffer object whose preferred domains are @domains. */
struct drm_ualink_sim_gem_create {
	__u64 size;		/* in: bytes, rounded up to pages */
	__u32 domains;		/* in: UALINK_SIM_DOMAIN_* */
	__u32 flags;		/* in: must be 0 */
	__u32 handle;		/* out: GEM handle */
	__u32 pad;		/* must be 0 */
};

/* Fake offset for mmap() on the DRM fd. Refused for imported objects. */
struct drm_ualink_sim_gem_mmap {
	__u32 handle;
	__u32 pad;		/* must be 0 */
	__u64 offset;		/* out */
};

#define UALINK_SIM_GEM_KIND_BO		1	/* memory of this accelerator */
#define UALINK_SIM_GEM_KIND_REMOTE	2	/* imported: a peer's memory */
#define UALINK_SIM_GEM_KIND_ATTACHED	3	/* PRIME import of another's imported object:
						 * a dynamic attachment of its dma-buf */

/* What the model knows of one GEM object. Never an NPA. */
struct drm_ualink_sim_gem_info {
	__u32 handle;		/* in */
	__u32 kind;		/* UALINK_SIM_GEM_KIND_* */
	__u64 size;
	__u32 domains;		/* BO: preferred domains */
	__u32 pins;		/* BO: pins held for importers */
	__u32 moves;		/* BO: times evicted (moved) */
	__u32 exported;		/* BO: 1 while a UALink handle exists */
	__u32 handles;		/* BO: GEM handles, all files */
	__u32 revoked;		/* REMOTE: 1 once access was revoked; ATTACHED: 1 once
				 * a revoke notice came */
};
/* ATTACHED: pins is 1 while the attachment is mapped, moves the revoke
 * notices (move_notify, invalidate_mappings) it received. */

/* Evict (move) a BO, as TTM would under pressure: -EBUSY while pinned. */
struct drm_ualink_sim_gem_evict {
	__u32 handle;
	__u32 pad;		/* must be 0 */
};

#define UALINK_SIM_ACCESS_READ		0
#define UALINK_SIM_ACCESS_WRITE		1
#define UALINK_SIM_ACCESS_MAX		(1U << 20)

/*
 * A load or store by this accelerator through an imported object, over the
 * simulated fabric into the exporter's memory. -ENOLINK once revoked.
 */
struct drm_ualink_sim_remote_access {
	__u32 handle;		/* GEM handle of an imported object */
	__u32 op;		/* UALINK_SIM_ACCESS_* */
	__u64 offset;
	__u64 size;		/* at most UALINK_SIM_ACCESS_MAX */
	__u64 data;		/* user pointer */
};

/* Live objects of the whole pod, to check that nothing leaks. */
struct drm_ualink_sim_pod_stats {
	__u32 accel_id;		/* out: the accelerator asked */
	__u32 accelerators;	/* out: in the pod */
	__u64 bos;		/* buffer objects (all accelerators) */
	__u64 remote_objects;	/* imported objects still allocated */
	__u64 exports;		/* live UALink handles */
	__u64 imports;		/* importer nodes (one per handle and importer) */
	__u64 pins;		/* pins held for importers */
	__u64 resets;		/* node resets and offline transitions */
	__u64 pinned_bytes;	/* BO memory exports pin, all accelerators */
	__u64 pin_limit_bytes;	/* the cap on it: pin_limit_mib */
};

#define DRM_IOCTL_UALINK_SIM_GEM_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_UALINK_SIM_GEM_CREATE, struct drm_ualink_sim_gem_create)
#define DRM_IOCTL_UALINK_SIM_GEM_MMAP \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_UALINK_SIM_GEM_MMAP, struct drm_ualink_sim_gem_mmap)
#define DRM_IOCTL_UALINK_SIM_GEM_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_UALINK_SIM_GEM_INFO, struct drm_ualink_sim_gem_info)
#define DRM_IOCTL_UALINK_SIM_GEM_EVICT \
	DRM_IOW(DRM_COMMAND_BASE + DRM_UALINK_SIM_GEM_EVICT, struct drm_ualink_sim_gem_evict)
#define DRM_IOCTL_UALINK_SIM_REMOTE_ACCESS \
	DRM_IOW(DRM_COMMAND_BASE + DRM_UALINK_SIM_REMOTE_ACCESS, struct drm_ualink_sim_remote_access)
#define DRM_IOCTL_UALINK_SIM_POD_STATS \
	DRM_IOR(DRM_COMMAND_BASE + DRM_UALINK_SIM_POD_STATS, struct drm_ualink_sim_pod_stats)

/*
 * Fault injection (debugfs ualink_sim/faults): each bit turns on one known
 * deviation from the documented contract. cases/ualink/ names the case that
 * must fail for each; with no bit set every case must pass.
 */
/* unknown flags accepted (the posted amdgpu ioctl never checks them) */
#define UALINK_SIM_FAULT_FLAGS_UNCHECKED	(1U << 0)
/* a re-import is matched by handle_lo alone (as posted), handle_hi unchecked */
#define UALINK_SIM_FAULT_LOW_HALF_MATCH		(1U << 1)
/* handles are a counter, not random */
#define UALINK_SIM_FAULT_SEQUENTIAL_HANDLES	(1U << 2)
/* the handle survives the last GEM handle close; importers keep access */
#define UALINK_SIM_FAULT_NO_REVOKE_ON_CLOSE	(1U << 3)
/* a BO without VRAM in its preferred domains can be exported */
#define UALINK_SIM_FAULT_GTT_EXPORT		(1U << 4)
/* the import output carries the NPA next to the dma-buf fd */
#define UALINK_SIM_FAULT_NPA_LEAK		(1U << 5)
/* an import does not pin the exporter's BO */
#define UALINK_SIM_FAULT_NO_IMPORT_PIN		(1U << 6)
/* a node reset or offline leaves its peers' references in place */
#define UALINK_SIM_FAULT_NO_PEER_CLEANUP	(1U << 7)
/* accel_state is checked after op and flags, not before anything else */
#define UALINK_SIM_FAULT_STATE_AFTER_OP		(1U << 8)
/* every import makes a new object instead of a reference to the same one */
#define UALINK_SIM_FAULT_REIMPORT_NEW_OBJECT	(1U << 9)
/* every export of the same BO makes a new handle */
#define UALINK_SIM_FAULT_EXPORT_NOT_IDEMPOTENT	(1U << 10)
/* export reads gem_handle as 64 bits: stale bytes of the union matter */
#define UALINK_SIM_FAULT_GEM_HANDLE_WIDE	(1U << 11)
/* an import on the exporter itself is matched by handle_lo alone */
#define UALINK_SIM_FAULT_LOCAL_LOW_HALF_MATCH	(1U << 12)
/* flags are checked for export and local import, not for an import on a peer */
#define UALINK_SIM_FAULT_PEER_FLAGS_UNCHECKED	(1U << 13)
/* a peer's first import of a handle is matched by handle_lo alone */
#define UALINK_SIM_FAULT_FIRST_IMPORT_LOW_HALF	(1U << 14)
/* the handle ioctl has no DRM_AUTH: an unauthenticated primary-node client may use it */
#define UALINK_SIM_FAULT_PRIMARY_NO_AUTH	(1U << 15)
/* an import on the exporter itself still finds a handle revoked at the last GEM handle close */
#define UALINK_SIM_FAULT_LOCAL_IMPORT_REVOKED	(1U << 16)
/* a refused call writes its output anyway (zeros over the argument's first 16 bytes) */
#define UALINK_SIM_FAULT_OUTPUT_ON_ERROR	(1U << 17)
/* a refused re-import (wrong handle_hi) keeps a pin on the exporter's BO until the import goes */
#define UALINK_SIM_FAULT_REFUSED_IMPORT_PINS	(1U << 18)
/* bits 40-47 of handle_hi are not compared (on every import path) */
#define UALINK_SIM_FAULT_HANDLE_HI_BYTE_IGNORED	(1U << 19)
/* op is decoded from its low byte */
#define UALINK_SIM_FAULT_OP_LOW_BYTE		(1U << 20)
/* export looks the GEM handle up by its low 16 bits */
#define UALINK_SIM_FAULT_GEM_HANDLE_LOW16	(1U << 21)
/* "not active" is tested as a state before ready: the error state passes */
#define UALINK_SIM_FAULT_STATE_ORDERED		(1U << 22)
/* the handle dies with the DRM file that exported it, whoever else holds a GEM handle */
#define UALINK_SIM_FAULT_REVOKE_ON_EXPORTER_FILE_CLOSE (1U << 23)
/* an importer's reset makes the exporter drop every importer of the handle */
#define UALINK_SIM_FAULT_RESET_DROPS_ALL_IMPORTERS (1U << 24)
/* the imported dma-buf is named after its NPA (its fdinfo shows it) */
#define UALINK_SIM_FAULT_NPA_IN_DMABUF_NAME	(1U << 25)
/* an import logs its NPA (the kernel log) */
#define UALINK_SIM_FAULT_NPA_IN_KERNEL_LOG	(1U << 26)
/* the handle ioctl needs CAP_SYS_ADMIN (DRM_ROOT_ONLY) */
#define UALINK_SIM_FAULT_ROOT_ONLY		(1U << 27)
/* a remote load or store lands at offset 0 of its page, whatever its offset in the page */
#define UALINK_SIM_FAULT_ACCESS_IGNORES_OFFSET	(1U << 28)
/* an import from an accel id outside the pod is -EINVAL, not -ENODEV */
#define UALINK_SIM_FAULT_UNKNOWN_PEER_EINVAL	(1U << 29)
/* an import keeps its object (its record, the exporter's pin) after its last user let go */
#define UALINK_SIM_FAULT_IMPORT_OUTLIVES_USERS	(1U << 30)
/* a revoked import tells no dynamic importer of its dma-buf (no move_notify) */
#define UALINK_SIM_FAULT_NO_REVOKE_NOTICE	(1U << 31)
/* handle_hi is the same for every export of an accelerator */
#define UALINK_SIM_FAULT_CONSTANT_HANDLE_HI	(1ULL << 32)
/* handle_lo's bits 9:0 are random, not the exporter's accel id */
#define UALINK_SIM_FAULT_ACCEL_ID_NOT_IN_HANDLE	(1ULL << 33)
/* an import on the exporter makes a new dma-buf each time, not the BO's own */
#define UALINK_SIM_FAULT_LOCAL_IMPORT_NEW_DMABUF	(1ULL << 34)
/* an accel id past AMDGPU_UALINK_ACCEL_MAX is -ENODEV, not -EINVAL */
#define UALINK_SIM_FAULT_ACCEL_ID_RANGE_ENODEV	(1ULL << 35)
/* an import from an offline exporter is -EINVAL, not -ETIMEDOUT */
#define UALINK_SIM_FAULT_OFFLINE_EXPORTER_EINVAL	(1ULL << 36)
/* an imported object can be CPU mapped */
#define UALINK_SIM_FAULT_REMOTE_CPU_MAPPABLE	(1ULL << 37)
#define UALINK_SIM_FAULT_ALL			((1ULL << 38) - 1)

/*
 * debugfs ualink_sim/plant: a bug planted for the fuzzer's proof, not a fault
 * bit. No case can see it; tests/fuzz/ualink_fuzz.cpp under the debug
 * kernel's KASAN must (tests/vm/debug-kernel.sh).
 */
#define UALINK_SIM_PLANT_NONE			0
/* a destroyed import stays on its importer's list, freed (what the npa show once read) */
#define UALINK_SIM_PLANT_DANGLING_IMPORT	1

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_UALINK_SIM_H */
