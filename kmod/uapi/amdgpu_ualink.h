/* SPDX-License-Identifier: MIT */
/*
 * The amdgpu UALink handle ioctl, as posted upstream: "[PATCH 2/3]
 * drm/amdgpu: Add ioctl infra for exporting/importing UALink handles"
 * (Mukul Joshi, amdgpu UALink infrastructure series 2, 2026), its hunk to
 * include/uapi/drm/amdgpu_drm.h. Copied field for field so that the
 * conformance cases (cases/ualink/) and the reference model
 * (kmod/ualink_sim/) speak exactly the ABI amdgpu does. Do not change the
 * layout here: change it only when the upstream uapi changes.
 *
 * The whole union is 24 bytes; the ioctl number is
 * DRM_IOWR(DRM_COMMAND_BASE + 0x1B, 24 bytes) = 0xC018645B.
 */
#ifndef _UAPI_PINMATRIX_AMDGPU_UALINK_H
#define _UAPI_PINMATRIX_AMDGPU_UALINK_H

/* drm.h is include/uapi/drm/drm.h in the kernel, libdrm's in user space. */
#ifdef __KERNEL__
#include <drm/drm.h>
#else
#include <drm.h>
#endif

#if defined(__cplusplus)
extern "C" {
#endif

/* A newer amdgpu_drm.h may carry these already: then it is the reference. */
#ifndef DRM_AMDGPU_UALINK_HANDLE

#define DRM_AMDGPU_UALINK_HANDLE	0x1B

#define DRM_IOCTL_AMDGPU_UALINK_HANDLE DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_UALINK_HANDLE, union drm_amdgpu_ualink_handle)

#define DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT		0
#define DRM_AMDGPU_UALINK_HANDLE_OP_IMPORT		1

struct drm_amdgpu_ualink_handle_in {
	/* Export or import */
	__u32 op;
	/* For future use, no flags defined so far */
	__u32 flags;
	union {
		/* GEM handle of the BO to export */
		__u32 gem_handle;
		/* UALink handle to import */
		__u64 import_ualink_handle[2];
	};
};

union drm_amdgpu_ualink_handle_out {
	/* Exported UALink handle */
	__u64 export_ualink_handle[2];
	/** DMABuf representing the imported UALink handle */
	__u32 import_dmabuf_handle;
};

union drm_amdgpu_ualink_handle {
	struct drm_amdgpu_ualink_handle_in in;
	union drm_amdgpu_ualink_handle_out out;
};

#endif /* DRM_AMDGPU_UALINK_HANDLE */

/*
 * Not uapi upstream, but part of the contract the series documents
 * (amdgpu_ualink.h, amdgpu_generate_ualink_handle()): bits 9:0 of
 * handle_lo (export_ualink_handle[0]) carry the exporter's accelerator id;
 * ids from AMDGPU_UALINK_ACCEL_MAX up are refused on import.
 */
#define AMDGPU_UALINK_HANDLE_ACCID_BITS	10
#define AMDGPU_UALINK_HANDLE_ACCID_MASK_U64	((__u64)0x3FF)
#define AMDGPU_UALINK_ACCEL_MAX_IDS	256

/* amdgpu's GEM domains (amdgpu_drm.h); the model names domains with them. */
#ifndef AMDGPU_GEM_DOMAIN_GTT
#define AMDGPU_GEM_DOMAIN_GTT		0x2
#define AMDGPU_GEM_DOMAIN_VRAM		0x4
#endif

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_PINMATRIX_AMDGPU_UALINK_H */
