// SPDX-License-Identifier: GPL-2.0
/* PM_HAVE_PB_MIGRATE_ISOLATE: MIGRATE_ISOLATE is its own pageblock bit (6.17+) */
/* PB_migrate_isolate, with CONFIG_MEMORY_ISOLATION (NR_PAGEBLOCK_BITS is 8 then). */
#include <linux/mmzone.h>
#include <linux/pageblock-flags.h>

int pm_conftest(void);
int pm_conftest(void)
{
	return BIT(PB_migrate_isolate) | PAGEBLOCK_MIGRATETYPE_MASK;
}
