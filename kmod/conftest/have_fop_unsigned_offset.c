// SPDX-License-Identifier: GPL-2.0
/* PM_HAVE_FOP_UNSIGNED_OFFSET: file_operations.fop_flags, FOP_UNSIGNED_OFFSET (6.12 on) */
/* DRM_GEM_FOPS sets it; a driver listing its own file operations must too. */
#include <linux/fs.h>

extern const struct file_operations pm_conftest_fops;
const struct file_operations pm_conftest_fops = {
	.fop_flags = FOP_UNSIGNED_OFFSET,
};
