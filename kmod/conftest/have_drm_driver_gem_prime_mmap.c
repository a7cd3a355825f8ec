// SPDX-License-Identifier: GPL-2.0
/* PM_HAVE_DRM_DRIVER_GEM_PRIME_MMAP: drm_driver.gem_prime_mmap (removed in 6.6) */
/* Until then dma-buf mmap of a GEM object goes through it; later GEM's own mmap serves. */
#include <drm/drm_drv.h>
#include <drm/drm_prime.h>

extern const struct drm_driver pm_conftest_driver;
const struct drm_driver pm_conftest_driver = {
	.gem_prime_mmap = drm_gem_prime_mmap,
};
