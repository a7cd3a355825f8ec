// SPDX-License-Identifier: GPL-2.0
#include "known_bugs.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>

namespace pinmatrix {

using nlohmann::json;

namespace {

using op = record_test::op;

// A CMA heap's page is on no LRU: nothing can isolate it, and 6.1 retries
// the long-term pin until the task is killed.
known_bug cma_heap_longterm_retry()
{
	return {"cma-heap-longterm-retry",
		 "a long-term pin of a CMA dma-heap page never returns: the kernel retries it until the task is "
		 "killed (state R, 10 s and on)",
		 "mm/gup.c: __gup_longterm_locked() loops while check_and_migrate_movable_pages() returns -EAGAIN; "
		 "a MIGRATE_CMA folio on no LRU (drivers/dma-buf/heaps/cma_heap.c hands out cma_alloc()ed pages) "
		 "cannot be isolated, so no migration list ever holds it and the empty list is -EAGAIN again",
		 {"pinner/cma-heap"},
		 // The 6.1.129-6.1.154 window carried 1aaf8c122918, which ended
		 // the loop by pinning in place (the row's other legal end).
		 {{{6, 1, 0}, {6, 1, 128}}, {{6, 1, 155}, {6, 1, INT_MAX}}},
		 nullptr,
		 "unfixed: 1aaf8c122918 (mm: gup: fix infinite loop within __get_longterm_locked) ended the loop by "
		 "pinning such a folio in place and was reverted by 517f496e1e61 for the race that opened",
		 "the suite's 6.1.192 (the debug kernel's cma boot)",
		 "pinmatrix vm --kernel build:debug --boot cma --cases pinner/cma-heap",
		 true,
		 {.all = {{"/observed/returned", op::equals, false},
			  {"/observed/heap", op::starts_with, "/dev/dma_heap/"}}}};
}

// One long-term pin call of more than 2 GiB: 6.11 refused it (the fix was
// taken into 6.11.y at a release not known here: a 6.11.y with it shows as
// an unexpected pass).
known_bug one_call_over_2g_refused()
{
	return {"53ba78de064b",
		 "one long-term pin of more than 2 GiB in one call is refused with ENOMEM (and a page allocator "
		 "WARNING)",
		 "mm/gup.c: check_and_migrate_movable_pages() begins with kmalloc_array() of a folio pointer per page "
		 "(commit 53ba78de064b), which cannot pass KMALLOC_MAX_SIZE: 4 MiB, 2 GiB of 4 KiB pages",
		 {"pinner/gup-test-over-2g"},
		 {whole_series(6, 11)},
		 "94efde1d1539",
		 "mm/gup: avoid an unnecessary allocation call for FOLL_LONGTERM cases (6.12-rc7)",
		 "the suite's mutant kernels (pinmatrix_mutant=13, matrix/patches/); no 6.11 kernel here",
		 "pinmatrix vm --kernel tree:DIR --boot movable --memory 3584 --cases pinner/gup-test-over-2g (DIR: a "
		 "6.11 tree with CONFIG_GUP_TEST)",
		 true,
		 {.all = {{"/observed/pinned_bytes", op::equals, 0}}}};
}

} // namespace

const std::vector<known_bug> &known_bugs()
{
	// Ranges are those of the public fixes (FACTS.md) or, for a bug with
	// no fix, the series where the suite met it: a release outside every
	// range stays a FAIL, which is the safe side of not knowing.
	static const std::vector<known_bug> table = {
		{"hugetlb-longterm-warn",
		 "a long-term pin of a 2 MiB hugetlb page in ZONE_MOVABLE or CMA WARNs and fails with ENOMEM "
		 "instead of migrating the page",
		 "mm/hugetlb.c: follow_hugetlb_page() takes the page with try_grab_folio(), whose FOLL_LONGTERM "
		 "check (meant for GUP-fast) refuses a page that is not long-term pinnable: WARN_ON_ONCE and "
		 "-ENOMEM before check_and_migrate_movable_pages() can move it",
		 {"backing/hugetlb-2m"},
		 {whole_series(6, 1)},
		 nullptr,
		 "no fix in the 6.1 stable series; upstream retired follow_hugetlb_page() in 6.5's GUP rework "
		 "(hugetlb goes through follow_page_mask() and migrates), as 6.12 shows",
		 "Debian's 6.1.192 (stock and built)",
		 "pinmatrix vm --kernel debian:6.1 --cases backing/hugetlb-2m",
		 true,
		 {.all = {{"/observed/errno", op::equals, ENOMEM},
			  {"/kernel_alarms/*", op::contains, "follow_hugetlb_page"}}}},
		{"rxe-odp-offset",
		 "data moved through an rxe ODP MR lands at (or is read from) the wrong offset in its page",
		 "drivers/infiniband/sw/rxe/rxe_odp.c: __rxe_odp_mr_copy() copies at the start of its "
		 "kmap_local_page() mapping, without the offset in the page it computed",
		 {"pinner/rxe-odp"},
		 {since({7, 2, 0})},
		 nullptr,
		 "unfixed (an earlier form, page_address() plus the offset, was right)",
		 "Debian's 7.2.13 (7.2.13+deb14)",
		 "tools/rxe-odp-offset.c",
		 true,
		 {.all = {{"/observed/device", op::starts_with, "rxe"}},
		  .any = {{"/observed/device_write/in_place/misplaced", op::equals, true},
			  {"/observed/device_write/after_give_back/misplaced", op::equals, true},
			  {"/observed/data_path/transfers/*/odp/misplaced", op::equals, true}}}},
		{"1aaf8c122918",
		 "a long-term pin succeeds in place when an unpinnable folio could not be isolated from the LRU "
		 "(another pinner had it): the page stays in ZONE_MOVABLE or CMA",
		 "mm/gup.c: collect_longterm_unpinnable_folios() returned on an empty list (commit 1aaf8c122918)",
		 {"race/reg-mr-same-buffer", "race/io-uring-same-buffer", "race/mixed-same-buffer",
		  "race/reg-mr-while-isolated"},
		 {{{6, 1, 129}, {6, 1, 154}}, {{6, 6, 79}, {6, 6, 108}}, {{6, 12, 14}, {6, 12, 35}}},
		 "517f496e1e61",
		 "the revert of 1aaf8c122918",
		 "the suite's mutant kernels (pinmatrix_mutant=1, matrix/patches/)",
		 nullptr,
		 false,
		 {.all = {{"/observed/rounds_in_place", op::nonzero}}}},
		{"98c6d259319e",
		 "a long-term pin of an mlocked page fails with ENOMEM: the folio sits in a per-CPU mlock batch "
		 "with an extra reference while PG_lru is set, and the LRU test skipped the drain",
		 "mm/gup.c: collect_longterm_unpinnable_folios() drains the LRU batches only for a folio not on "
		 "the LRU",
		 {"movable-mlock", "cma-mlock"},
		 {{{6, 1, 0}, {6, 1, 154}}, {{6, 6, 0}, {6, 6, 108}}, {{6, 12, 0}, {6, 12, 48}}},
		 "98c6d259319e",
		 "check ref_count instead of lru before migration",
		 "the suite's mutant kernels (pinmatrix_mutant=2, matrix/patches/)",
		 nullptr,
		 false,
		 {.all = {{"/observed/errno", op::equals, ENOMEM}}}},
		one_call_over_2g_refused(),
		cma_heap_longterm_retry(),
	};
	return table;
}

const known_bug *find_known_bug(const std::string &id)
{
	for (const auto &b : known_bugs())
		if (id == b.id)
			return &b;
	return nullptr;
}

namespace {

bool meets(const json &found, const record_test &t)
{
	switch (t.test) {
	case op::equals:
		return found == t.value;
	case op::starts_with:
		return found.is_string() && found.get<std::string>().starts_with(t.value.get<std::string>());
	case op::contains:
		return found.is_string() && found.get<std::string>().find(t.value.get<std::string>()) != std::string::npos;
	case op::nonzero:
		return (found.is_number() && found != 0) || found == true;
	}
	return false;
}

// The pointer's steps ("/a/*/b" -> a, *, b), "~1" and "~0" unescaped.
std::vector<std::string> steps_of(const std::string &pointer)
{
	std::vector<std::string> steps;
	for (size_t at = 1; at <= pointer.size();) {
		const size_t end = std::min(pointer.find('/', at), pointer.size());
		std::string step = pointer.substr(at, end - at);
		for (size_t i = 0; (i = step.find('~', i)) != std::string::npos; i++)
			step.replace(i, 2, step.compare(i, 2, "~1") == 0 ? "/" : "~");
		steps.push_back(step);
		at = end + 1;
	}
	return steps;
}

bool any_meets(const json &at, const std::vector<std::string> &steps, size_t i, const record_test &t)
{
	if (i == steps.size())
		return meets(at, t);
	if (steps[i] == "*") {
		if (!at.is_array() && !at.is_object())
			return false;
		return std::any_of(at.begin(), at.end(), [&](const json &e) { return any_meets(e, steps, i + 1, t); });
	}
	if (at.is_object()) {
		const auto next = at.find(steps[i]);
		return next != at.end() && any_meets(*next, steps, i + 1, t);
	}
	if (at.is_array() && !steps[i].empty() && steps[i].find_first_not_of("0123456789") == std::string::npos) {
		const size_t index = std::stoul(steps[i]);
		return index < at.size() && any_meets(at[index], steps, i + 1, t);
	}
	return false;
}

bool holds(const record_test &t, const json &record)
{
	return any_meets(record, steps_of(t.pointer), 0, t);
}

bool carries(const known_bug &b, const kernel_version &k)
{
	return std::any_of(b.kernels.begin(), b.kernels.end(), [&](const version_range &r) { return r.holds(k); });
}

bool breaks(const known_bug &b, const std::string &case_id)
{
	return std::any_of(b.cases.begin(), b.cases.end(), [&](const char *id) { return case_id == id; });
}

std::string fix_text(const known_bug &b)
{
	return b.fix_commit ? std::string("fixed by ") + b.fix_commit + " (\"" + b.fix_subject + "\")"
			    : std::string(b.fix_subject);
}

} // namespace

bool shows(const bug_signature &s, const json &record)
{
	auto holds_in = [&](const record_test &t) { return holds(t, record); };
	return std::all_of(s.all.begin(), s.all.end(), holds_in) &&
	       (s.any.empty() || std::any_of(s.any.begin(), s.any.end(), holds_in));
}

json known_bug_json(const known_bug &b)
{
	json j = {{"id", b.id},
		  {"title", b.title},
		  {"where", b.where},
		  {"kernels", ranges_text(b.kernels)},
		  {"fix", b.fix_commit ? json{{"commit", b.fix_commit}, {"subject", b.fix_subject}} : json("unfixed")},
		  {"fix_note", fix_text(b)},
		  {"seen_on", b.seen_on}};
	if (b.reproducer)
		j["reproducer"] = b.reproducer;
	return j;
}

void apply_known_bugs(case_record &r, const std::optional<kernel_version> &kernel, bool strict)
{
	if (!kernel || (r.outcome != verdict::fail && r.outcome != verdict::pass))
		return;
	const json record = to_json(r);
	for (const auto &b : known_bugs()) {
		if (!breaks(b, r.id) || !carries(b, *kernel))
			continue;
		const bool failed_so = r.outcome == verdict::fail && shows(b.signature, record);
		const bool passed_anyway = r.outcome == verdict::pass && b.always;
		if (!failed_so && !passed_anyway)
			continue;
		r.details["known_bug"] = known_bug_json(b);
		r.details["known_bug"]["kernel"] = kernel->text();
		const std::string bug = std::string("known bug ") + b.id + " of " + kernel->text() + ": " + b.title +
					" (" + b.where + "; " + fix_text(b) + ")";
		if (failed_so) {
			r.outcome = strict ? verdict::fail : verdict::xfail;
			r.reason = (strict ? "expected failure, counted (--strict): " : "expected failure, ") + bug +
				   "; " + r.reason;
		} else {
			r.outcome = strict ? verdict::fail : verdict::xpass;
			r.reason = std::string(strict ? "unexpected pass, counted (--strict): " : "unexpected pass: ") +
				   bug + " should fail this case on " + kernel->text() +
				   ", and it passed: the known-bug table (matrix/known_bugs.cpp) is out of date, or "
				   "this kernel carries the fix";
		}
		return;
	}
}

} // namespace pinmatrix
