// SPDX-License-Identifier: GPL-2.0
/* PM_HAVE_DRM_DRIVER_DATE: drm_driver.date (removed in 6.14) */
#include <drm/drm_drv.h>

extern const struct drm_driver pm_conftest_driver;
const struct drm_driver pm_conftest_driver = {
	.date = "20260901",
};
