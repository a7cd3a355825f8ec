// SPDX-License-Identifier: GPL-2.0
/* PM_HAVE_DRM_GEM_GET_UNMAPPED_AREA: drm_gem_get_unmapped_area() in DRM_GEM_FOPS (7.x) */
/* A driver listing its own file operations sets it as DRM_GEM_FOPS does. */
#include <linux/fs.h>
#include <drm/drm_gem.h>

extern const struct file_operations pm_conftest_fops;
const struct file_operations pm_conftest_fops = {
	.get_unmapped_area = drm_gem_get_unmapped_area,
};
