// SPDX-License-Identifier: GPL-2.0
/* PM_HAVE_FOLIO_IS_FSDAX: folio_is_longterm_pinnable() refuses fsdax folios (6.15+) */
/* folio_is_fsdax() came with that check. */
#include <linux/memremap.h>
#include <linux/mm.h>

bool pm_conftest(const struct folio *folio);
bool pm_conftest(const struct folio *folio)
{
	return folio_is_fsdax(folio);
}
