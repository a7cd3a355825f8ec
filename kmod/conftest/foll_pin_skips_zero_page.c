// SPDX-License-Identifier: GPL-2.0
/* PM_FOLL_PIN_SKIPS_ZERO_PAGE: FOLL_PIN takes no pin on the zero page (6.5+, 6.1.y) */
/*
 * c8070b787519 ("mm: Don't pin ZERO_PAGE in pin_user_pages()") added
 * is_zero_folio() with the is_zero_page() tests in mm/gup.c try_grab_folio()
 * and gup_put_folio(); Debian's 6.1.192 carries it.
 */
#include <linux/mm.h>

bool pm_conftest(const struct folio *folio);
bool pm_conftest(const struct folio *folio)
{
	return is_zero_folio(folio);
}
