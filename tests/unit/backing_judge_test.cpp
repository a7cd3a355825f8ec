// SPDX-License-Identifier: GPL-2.0
// cases/backing: the table's outcomes by kernel version, and the judge on
// hand-built observations: it passes what a correct kernel shows, fails a
// registration that kept a page in restricted memory or answered other
// than the version's row, names a known bug, and skips what checked nothing.

#include <algorithm>

#include <gtest/gtest.h>

#include "backing/backing_cases.hpp"
#include "known_bugs.hpp"

using namespace pinmatrix;
using namespace pinmatrix::backing_cases;
using nlohmann::json;

namespace {

const backing_case &case_by_id(const std::string &id) { return row_of(definition, id); }

// The suite's judge, as the runner calls it on kernel v.
case_record judge_case(const backing_case &c, const nlohmann::json &o, const std::optional<kernel_version> &v)
{
	return judge_row(definition, c, v, o);
}

} // namespace

namespace {

constexpr kernel_version v6_1{6, 1, 192}, v6_12{6, 12, 117}, v7_2{7, 2, 13};

json counts(size_t restricted, size_t ordinary, size_t zero = 0, size_t absent = 0)
{
	return {{"restricted", restricted}, {"ordinary", ordinary}, {"zero_page", zero},
		{"absent", absent},	    {"unknown", 0},	     {"first_pfn", 1}};
}

// The page table as a GUP-fast row's was before its pin: every page present.
json fast_path(size_t pages)
{
	return {{"path", "fast"}, {"pages", pages}, {"present_before", pages}, {"written_before", true}};
}

json observation(int err, size_t pages, const json &before, const json &after)
{
	return {{"errno", err},	      {"pages", pages}, {"before", before},
		{"after", after},     {"probe", "module"}, {"gup_path", fast_path(pages)}};
}

// A correct kernel's registration of a row that starts in restricted memory.
json moved(size_t pages = 1)
{
	return observation(0, pages, counts(pages, 0), counts(0, pages));
}

} // namespace

TEST(BackingTable, EveryKernelHasExactlyOneRowAndEveryChangeItsCommit)
{
	const kernel_version kernels[] = {{0, 0, 0},   {6, 1, 0},    {6, 1, 192}, {6, 2, 0},  {6, 4, 16},
					  {6, 5, 0},   {6, 11, 0},   {6, 12, 117}, {7, 2, 13}, {99, 0, 0}};
	for (const auto &c : case_table()) {
		for (const auto &k : kernels) {
			const auto n = std::count_if(c.outcomes.begin(), c.outcomes.end(),
						     [&](const version_outcome &o) { return o.versions.holds(k); });
			EXPECT_EQ(n, 1) << c.id() << " on " << k.text();
		}
		for (const auto &o : c.outcomes) {
			const bool a_change = o.versions.first != kernel_version{0, 0, 0};
			EXPECT_TRUE(!a_change || o.versions.commit) << c.id() << ": from " << o.versions.first.text();
		}
	}
}

TEST(BackingTable, TheWritableFileRuleAndTheReadOnlyMrChangedBetweenVersions)
{
	const auto &file = case_by_id("backing/file-shared-writable");
	EXPECT_EQ(outcome_for(file, v6_1)->err, 0);
	EXPECT_EQ(outcome_for(file, kernel_version{6, 4, 16})->err, 0);
	EXPECT_EQ(outcome_for(file, kernel_version{6, 5, 0})->err, EFAULT);
	EXPECT_EQ(outcome_for(file, v6_12)->err, EFAULT);
	const auto &ro = case_by_id("backing/file-shared-read-only");
	EXPECT_EQ(outcome_for(ro, v6_1)->err, EFAULT);
	EXPECT_EQ(outcome_for(ro, v7_2)->err, 0);
	// Unknown version: known only where every version agrees.
	EXPECT_EQ(outcome_for(file, std::nullopt), nullptr);
	EXPECT_EQ(outcome_for(case_by_id("backing/secretmem"), std::nullopt)->err, EFAULT);
}

TEST(BackingJudge, PassesWhatACorrectKernelShows)
{
	EXPECT_EQ(judge_case(case_by_id("backing/memfd"), moved(), v6_12).outcome, verdict::pass);
	EXPECT_EQ(judge_case(case_by_id("backing/anon-thp"), moved(512), v6_1).outcome, verdict::pass);
	const json refused = observation(EFAULT, 1, counts(1, 0), counts(1, 0));
	EXPECT_EQ(judge_case(case_by_id("backing/file-shared-writable"), refused, v6_12).outcome, verdict::pass);
	json fresh = observation(0, 16, counts(0, 0, 16), counts(0, 16));
	fresh["control_fresh_pages"] = counts(16, 0);
	EXPECT_EQ(judge_case(case_by_id("backing/zero-page"), fresh, v6_1).outcome, verdict::pass);
}

// Fresh pages outside restricted memory show something only where the
// control's fresh pages, with no pin, landed in it.
TEST(BackingJudge, FreshPagesWithoutAControlThatWentThereDecideNothing)
{
	json fresh = observation(0, 16, counts(0, 0, 0, 16), counts(0, 16));
	fresh["gup_path"] = {{"path", "slow"}, {"pages", 16}, {"present_before", 0}, {"written_before", false}};
	auto r = judge_case(case_by_id("backing/unpopulated"), fresh, v6_12);
	EXPECT_EQ(r.outcome, verdict::error);
	EXPECT_NE(r.reason.find("none in restricted memory decided nothing: no control"), std::string::npos)
		<< r.reason;
	fresh["control_fresh_pages"] = counts(0, 16);
	r = judge_case(case_by_id("backing/unpopulated"), fresh, v6_12);
	EXPECT_EQ(r.outcome, verdict::skip);
	EXPECT_NE(r.reason.find("landed in no restricted memory either"), std::string::npos) << r.reason;
	fresh["control_fresh_pages"] = counts(12, 4);
	EXPECT_EQ(judge_case(case_by_id("backing/unpopulated"), fresh, v6_12).outcome, verdict::pass);
}

TEST(BackingJudge, FailsASuccessInPlace)
{
	const json in_place = observation(0, 1, counts(1, 0), counts(1, 0));
	const auto r = judge_case(case_by_id("backing/memfd"), in_place, v6_12);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("succeeded in place"), std::string::npos) << r.reason;
}

TEST(BackingJudge, FailsAnAnswerOtherThanTheVersionsRow)
{
	// 6.12 refuses a writable long-term pin of a file mapping; 6.1 registers it.
	auto r = judge_case(case_by_id("backing/file-shared-writable"), moved(), v6_12);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("expected EFAULT on 6.12.117"), std::string::npos) << r.reason;
	EXPECT_EQ(judge_case(case_by_id("backing/file-shared-writable"), moved(), v6_1).outcome, verdict::pass);
}

// 6.1's hugetlb WARN (matrix/known_bugs.cpp): an ENOMEM with the WARN in
// follow_hugetlb_page() is the expected failure on 6.1; the same ENOMEM
// without that WARN, or on 6.12, stays a FAIL.
TEST(BackingJudge, TheHugetlbWarnOf61IsAnExpectedFailureThereAlone)
{
	const json refused = observation(ENOMEM, 512, counts(512, 0), counts(512, 0));
	auto r = judge_case(case_by_id("backing/hugetlb-2m"), refused, v6_1);
	EXPECT_EQ(r.outcome, verdict::fail);
	auto without_warn = r;
	apply_known_bugs(without_warn, v6_1, false);
	EXPECT_EQ(without_warn.outcome, verdict::fail) << "an ENOMEM without the WARN is another failure";
	r.details["kernel_alarms"] = {"WARNING: CPU: 0 PID: 97 at mm/hugetlb.c:6629 follow_hugetlb_page+0x5c1/0x6f0"};
	auto on_6_12 = judge_case(case_by_id("backing/hugetlb-2m"), refused, v6_12);
	on_6_12.details = r.details;
	apply_known_bugs(on_6_12, v6_12, false);
	EXPECT_EQ(on_6_12.outcome, verdict::fail);
	apply_known_bugs(r, v6_1, false);
	EXPECT_EQ(r.outcome, verdict::xfail) << r.reason;
	EXPECT_NE(r.reason.find("known bug hugetlb-longterm-warn of 6.1.192"), std::string::npos) << r.reason;
	EXPECT_EQ(r.details.at("known_bug").at("fix"), "unfixed");
}

TEST(BackingJudge, TheZeroPageLeftInTheRegistrationFails)
{
	const json kept = observation(0, 16, counts(0, 0, 16), counts(0, 0, 16));
	EXPECT_EQ(judge_case(case_by_id("backing/zero-page"), kept, v6_12).outcome, verdict::fail);
}

TEST(BackingJudge, APageThatLeftBeforeTheRegistrationChecksNothing)
{
	const json reclaimed = observation(0, 1, counts(0, 0, 0, 1), counts(0, 1));
	const auto r = judge_case(case_by_id("backing/file-shared-read-only"), reclaimed, v7_2);
	EXPECT_EQ(r.outcome, verdict::skip);
	EXPECT_NE(r.reason.find("0 of 1 pages were in restricted memory"), std::string::npos) << r.reason;
}

TEST(BackingJudge, AnUnknownVersionWhereTheRowsDifferIsASkip)
{
	const auto r = judge_case(case_by_id("backing/file-shared-writable"), moved(), std::nullopt);
	EXPECT_EQ(r.outcome, verdict::skip);
	EXPECT_EQ(r.expected["summary"], "unknown: the outcome depends on the kernel version, which cannot be read");
}

// A record whose fields contradict each other (a folio "moved whole" with
// pages where they were) is a bug of the suite: ERROR, never a PASS.
TEST(BackingJudge, ARecordThatContradictsItselfIsAnError)
{
	json o = moved(512);
	o["thp_after"] = "moved whole (one 2 MiB folio)";
	EXPECT_EQ(judge_case(case_by_id("backing/anon-thp"), o, v6_1).outcome, verdict::pass);
	o["inconsistent"] = "one 2 MiB folio after the registration, but 3 of 512 pages moved";
	const auto r = judge_case(case_by_id("backing/anon-thp"), o, v6_1);
	EXPECT_EQ(r.outcome, verdict::error);
	EXPECT_NE(r.reason.find("the record contradicts itself (a bug of pinmatrix): one 2 MiB folio"),
		  std::string::npos) << r.reason;
}

// Each rule through both of GUP's paths: a fast row decides only where its
// pages were present before the pin, a slow row only where none was;
// otherwise the row tested the other path, and decided nothing.
TEST(BackingJudge, EachPathDecidesOnlyWhereThePageTableLetIt)
{
	for (const char *rule : {"memfd", "file-shared-writable", "file-shared-read-only", "secretmem"}) {
		const auto &fast = case_by_id(std::string("backing/") + rule);
		const auto &slow = case_by_id(std::string("backing/") + rule + "-slow-path");
		EXPECT_EQ(fast.path, gup_path::fast) << rule;
		EXPECT_EQ(slow.path, gup_path::slow) << rule;
		EXPECT_EQ(slow.outcomes.size(), fast.outcomes.size()) << rule << ": one rule, one table of outcomes";
	}
	const auto &memfd = case_by_id("backing/memfd"), &memfd_slow = case_by_id("backing/memfd-slow-path");
	json o = moved(1);
	EXPECT_EQ(judge_case(memfd, o, v6_12).outcome, verdict::pass);
	o["gup_path"]["present_before"] = 0;
	const auto absent = judge_case(memfd, o, v6_12);
	EXPECT_EQ(absent.outcome, verdict::error) << absent.reason;
	EXPECT_NE(absent.reason.find("the GUP-fast variant decided nothing: only 0 of 1 pages were present"),
		  std::string::npos) << absent.reason;
	o["gup_path"]["path"] = "slow";
	EXPECT_EQ(judge_case(memfd_slow, o, v6_12).outcome, verdict::pass);
	o["gup_path"]["present_before"] = 1;
	const auto mapped = judge_case(memfd_slow, o, v6_12);
	EXPECT_EQ(mapped.outcome, verdict::error);
	EXPECT_NE(mapped.reason.find("GUP-fast may have decided them"), std::string::npos) << mapped.reason;
	// A refusal is judged on its path too; a FAIL it decided stands.
	json refused = observation(EFAULT, 1, counts(0, 1), counts(0, 1));
	refused["gup_path"]["present_before"] = 0;
	EXPECT_EQ(judge_case(case_by_id("backing/secretmem"), refused, v6_12).outcome, verdict::error);
	json wrong = observation(0, 1, counts(0, 1), counts(0, 1));
	wrong["gup_path"]["present_before"] = 0;
	EXPECT_EQ(judge_case(case_by_id("backing/secretmem"), wrong, v6_12).outcome, verdict::fail);
}

// GUP-fast's own file rule (gup_fast_folio_allowed()) decides only for a
// page GUP-fast may pin where it is: one found in restricted memory goes to
// the slow path first, so the in-place row is a SKIP there, never a PASS
// that checked the slow path again.
TEST(BackingJudge, TheFastPathsOwnRuleNeedsAPageItMayPinInPlace)
{
	const auto &row = case_by_id("backing/file-shared-writable-in-place");
	EXPECT_EQ(row.path, gup_path::fast);
	EXPECT_FALSE(row.starts_restricted);
	const json refused = observation(EFAULT, 1, counts(0, 1), counts(0, 1));
	EXPECT_EQ(judge_case(row, refused, v7_2).outcome, verdict::pass);
	const json pinned = observation(0, 1, counts(0, 1), counts(0, 1));
	EXPECT_EQ(judge_case(row, pinned, v7_2).outcome, verdict::fail);
	EXPECT_EQ(judge_case(row, pinned, v6_1).outcome, verdict::pass);
	const auto out_of_reach = judge_case(row, observation(EFAULT, 1, counts(1, 0), counts(1, 0)), v7_2);
	EXPECT_EQ(out_of_reach.outcome, verdict::skip) << out_of_reach.reason;
	EXPECT_NE(out_of_reach.reason.find("GUP-fast hands such a page to the slow path"), std::string::npos)
		<< out_of_reach.reason;
	// The rows that start in restricted memory are GUP-fast's pinnability rule's.
	EXPECT_EQ(judge_case(case_by_id("backing/file-shared-writable"),
			     observation(EFAULT, 1, counts(1, 0), counts(1, 0)), v7_2).outcome,
		  verdict::pass);
}

// Which path decided, as the kernel trace shows it (trace.gup_paths of the
// row's registration): recorded with the row, named in a FAIL, and a
// slow-path row whose pages GUP-fast pinned tested GUP-fast (decided
// nothing), whatever the page table said.
TEST(BackingJudge, TheTracedGupPathIsRecordedAndMustAgree)
{
	const auto traced = [](json o, int64_t requested, int64_t slow) {
		o["registrations"] = json::array(
			{{{"trace", {{"gup_paths", {{"requested", requested},
						    {"gup_fast_pinned", requested - slow},
						    {"slow_path_pages", slow}}}}}}});
		return o;
	};
	const auto &row = case_by_id("backing/file-shared-writable-in-place");
	auto r = judge_case(row, traced(observation(EFAULT, 1, counts(0, 1), counts(0, 1)), 1, 1), v7_2);
	EXPECT_EQ(r.outcome, verdict::pass) << r.reason;
	EXPECT_EQ((*r.observed)["gup_path"]["decided_by"],
		  "GUP-fast pinned 0 of 1 pages, the slow path was handed 1 (traced)");
	// A kernel whose GUP-fast lets the page through (mutant 9): the FAIL names it.
	r = judge_case(row, traced(observation(0, 1, counts(0, 1), counts(0, 1)), 1, 0), v7_2);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("GUP-fast pinned 1 of 1 pages, the slow path was handed 0"), std::string::npos)
		<< r.reason;
	// Not traced: said so, the page table alone decides.
	r = judge_case(row, observation(EFAULT, 1, counts(0, 1), counts(0, 1)), v7_2);
	EXPECT_EQ(r.outcome, verdict::pass);
	EXPECT_EQ((*r.observed)["gup_path"]["decided_by"], "not traced on this kernel");
	// The slow-path twin: GUP-fast must have pinned nothing.
	const auto &slow = case_by_id("backing/file-shared-writable-slow-path");
	json o = observation(EFAULT, 1, counts(1, 0), counts(1, 0));
	o["gup_path"]["path"] = "slow";
	o["gup_path"]["present_before"] = 0;
	EXPECT_EQ(judge_case(slow, traced(o, 1, 1), v7_2).outcome, verdict::pass);
	r = judge_case(slow, traced(o, 1, 0), v7_2);
	EXPECT_EQ(r.outcome, verdict::error);
	EXPECT_NE(r.reason.find("the slow-path variant decided nothing: GUP-fast pinned 1 of 1 pages"), std::string::npos)
		<< r.reason;
}

// A row that starts in restricted memory checks nothing on a boot that has
// none: a SKIP that says so, not a guess that its pages were reclaimed.
TEST(BackingJudge, TheOrdinaryBootSaysItHasNoRestrictedMemory)
{
	json o = observation(0, 1, counts(0, 1), counts(0, 1));
	o["placement"] = "ordinary";
	auto r = judge_case(case_by_id("backing/memfd"), o, v6_12);
	EXPECT_EQ(r.outcome, verdict::skip);
	EXPECT_NE(r.reason.find("this boot (ordinary) has no restricted memory"), std::string::npos) << r.reason;
	o["placement"] = "movable";
	r = judge_case(case_by_id("backing/memfd"), o, v6_12);
	EXPECT_EQ(r.outcome, verdict::skip);
	EXPECT_NE(r.reason.find("reclaimed after they were found?"), std::string::npos) << r.reason;
}
