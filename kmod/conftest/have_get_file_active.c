// SPDX-License-Identifier: GPL-2.0
/* PM_HAVE_GET_FILE_ACTIVE: get_file_active() (6.7 on; before it, get_file_rcu() took the file) */
/* A reference to a file unless its count already reached zero. */
#include <linux/file.h>
#include <linux/fs.h>

struct file *pm_conftest(struct file **f);
struct file *pm_conftest(struct file **f)
{
	return get_file_active(f);
}
