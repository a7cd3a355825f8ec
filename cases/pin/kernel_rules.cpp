// SPDX-License-Identifier: GPL-2.0
#include "kernel_rules.hpp"

#include <stdexcept>

#include "known_bugs.hpp"

namespace pinmatrix {

namespace {

bool every_pin_case(const case_def &)
{
	return true;
}

bool restricted_page(const case_def &c)
{
	return c.where != placement::ordinary;
}

bool restricted_mlocked_page(const case_def &c)
{
	return c.where != placement::ordinary && c.first == first_pin::mlock;
}

// The kernels that carry a known bug (matrix/known_bugs.cpp): its ranges
// are written once, there.
std::vector<version_range> kernels_of_known_bug(const char *id)
{
	const known_bug *b = find_known_bug(id);
	if (!b)
		throw std::logic_error(std::string("kernel_rules.cpp names no known bug ") + id);
	return b->kernels;
}

} // namespace

const std::vector<kernel_rule> &kernel_rules()
{
	// A regression's kernels are its known bug's (matrix/known_bugs.cpp).
	static const std::vector<kernel_rule> table = {
		{"longterm-placement",
		 "a FOLL_LONGTERM pin first migrates a page out of ZONE_MOVABLE or a MIGRATE_CMA pageblock; "
		 "a reference held on the page makes that migration fail and the pin return -ENOMEM",
		 "is_longterm_pinnable_page() (6.1), folio_is_longterm_pinnable() (6.2 on); "
		 "check_and_migrate_movable_pages() (6.1), migrate_longterm_unpinnable_folios() (6.12 on)",
		 {}, every_pin_case},
		{"1aaf8c122918",
		 "regression: a long-term pin succeeds IN PLACE when an unpinnable folio could not be isolated "
		 "from the LRU (collect_longterm_unpinnable_folios() returned on an empty list): the page stays "
		 "in CMA/ZONE_MOVABLE; reverted by 517f496e1e61",
		 "mm/gup.c, commit 1aaf8c122918, revert 517f496e1e61",
		 kernels_of_known_bug("1aaf8c122918"), restricted_page},
		{"98c6d259319e",
		 "regression: a folio in a per-CPU mlock batch holds an extra reference while PG_lru is set; "
		 "the LRU test skipped the drain and the long-term pin of an mlocked page failed with -ENOMEM",
		 "mm/gup.c, fixed by commit 98c6d259319e",
		 kernels_of_known_bug("98c6d259319e"), restricted_mlocked_page},
	};
	return table;
}


std::vector<applied_rule> rules_applied(const case_def &c, const std::optional<kernel_version> &v)
{
	std::vector<applied_rule> out;
	for (const auto &rule : kernel_rules()) {
		if (!rule.applies_to(c))
			continue;
		applied_rule a{rule.id, rule.says, rule.source, ranges_text(rule.versions), "", false};
		if (rule.versions.empty()) {
			a.in_range = true;
			a.this_kernel = "in range";
		} else if (!v) {
			a.this_kernel = "unknown (the kernel's upstream version cannot be read)";
		} else {
			for (const auto &r : rule.versions)
				a.in_range |= r.holds(*v);
			a.this_kernel = v->text() + (a.in_range ? " is in range" : " is not in range");
		}
		out.push_back(a);
	}
	return out;
}

} // namespace pinmatrix
