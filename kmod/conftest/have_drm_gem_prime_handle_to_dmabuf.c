// SPDX-License-Identifier: GPL-2.0
/* PM_HAVE_DRM_GEM_PRIME_HANDLE_TO_DMABUF: drm_gem_prime_handle_to_dmabuf() (6.12: 6.10 on) */
/* PRIME export of a handle into the file's cache, without installing an fd. */
#include <drm/drm_prime.h>

struct dma_buf *pm_conftest(struct drm_device *dev, struct drm_file *file, u32 handle);
struct dma_buf *pm_conftest(struct drm_device *dev, struct drm_file *file, u32 handle)
{
	return drm_gem_prime_handle_to_dmabuf(dev, file, handle, 0);
}
