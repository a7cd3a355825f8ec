// SPDX-License-Identifier: GPL-2.0
/* PM_HAVE_PAGEBLOCK_MIGRATETYPE_MASK: migratetype bits PB_migrate_0..2 (6.17+) */
/* PAGEBLOCK_MIGRATETYPE_MASK; isolation is no longer one of their values. */
#include <linux/mmzone.h>
#include <linux/pageblock-flags.h>

int pm_conftest(void);
int pm_conftest(void)
{
	return PB_migrate_0 + PB_compact_skip + PAGEBLOCK_MIGRATETYPE_MASK + NR_PAGEBLOCK_BITS;
}
