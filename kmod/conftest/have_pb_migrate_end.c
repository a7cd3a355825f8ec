// SPDX-License-Identifier: GPL-2.0
/* PM_HAVE_PB_MIGRATE_END: a pageblock's migratetype is one 3-bit field (up to 6.16) */
/* PB_migrate..PB_migrate_end under MIGRATETYPE_MASK hold enum migratetype, MIGRATE_ISOLATE too. */
#include <linux/mmzone.h>
#include <linux/pageblock-flags.h>

int pm_conftest(void);
int pm_conftest(void)
{
	return PB_migrate + PB_migrate_end + MIGRATETYPE_MASK + NR_PAGEBLOCK_BITS;
}
