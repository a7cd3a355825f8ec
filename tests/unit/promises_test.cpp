// SPDX-License-Identifier: GPL-2.0
// The promise and mutant tables (matrix/promises.cpp) against what they
// name: the suites' cases, the model's fault bits (uapi/ualink_sim.h) and
// the kernel patches (matrix/patches/); and `pinmatrix promises`.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../command.hpp"
#include "known_bugs.hpp"
#include "promises.hpp"
#include "suite.hpp"
#include "ualink_sim.h"

using namespace pinmatrix;
namespace fs = std::filesystem;

namespace {

// Every case id of every suite, for each source of first pins (the
// --no-module rows have the module's ids) and each restricted placement (a
// rung's id names it: movable-gup-ref, cma-gup-ref).
std::set<std::string> all_case_ids()
{
	std::set<std::string> ids;
	for (const char *source : {"module", "io_uring", "cuda", "hip"})
		for (const placement p : {placement::movable, placement::cma}) {
			suite_options opt;
			opt.pins.first_pin = source;
			opt.restricted = p;
			for (const auto &s : make_suites(opt))
				for (const auto &c : s->cases())
					ids.insert(c.id);
		}
	return ids;
}

const promise *promise_by_id(std::string_view id)
{
	for (const auto &p : promise_table())
		if (p.id == id)
			return &p;
	return nullptr;
}

} // namespace

TEST(Promises, IdsAreUniqueAndNameTheirContract)
{
	std::set<std::string_view> seen;
	for (const auto &p : promise_table()) {
		EXPECT_TRUE(seen.insert(p.id).second) << p.id << " twice";
		EXPECT_EQ(p.id.substr(0, p.id.find('/')), name(p.of)) << p.id;
		EXPECT_FALSE(p.source.empty()) << p.id;
		EXPECT_FALSE(p.text.empty()) << p.id;
	}
}

TEST(Promises, NameOnlyCasesThatExist)
{
	const auto ids = all_case_ids();
	for (const auto &p : promise_table())
		for (const auto c : p.cases)
			EXPECT_TRUE(ids.count(std::string(c))) << p.id << " names no case " << c;
}

// The known kernel bugs (matrix/known_bugs.cpp) name cases that exist, and
// each is well formed: kernels to carry it, a signature to know it by, a
// fix that is a commit or says there is none.
TEST(KnownBugs, NameOnlyCasesThatExistAndAreWellFormed)
{
	const auto ids = all_case_ids();
	std::set<std::string> bug_ids;
	for (const auto &b : known_bugs()) {
		EXPECT_TRUE(bug_ids.insert(b.id).second) << b.id << " twice";
		EXPECT_FALSE(b.cases.empty()) << b.id;
		for (const char *id : b.cases)
			EXPECT_TRUE(ids.contains(id)) << b.id << " names no case " << id;
		EXPECT_FALSE(b.kernels.empty()) << b.id;
		EXPECT_FALSE(b.signature.all.empty() && b.signature.any.empty()) << b.id << " has no signature";
		const std::string commit = b.fix_commit ? b.fix_commit : "";
		EXPECT_TRUE(!b.fix_commit ||
			    (commit.size() == 12 && commit.find_first_not_of("0123456789abcdef") == std::string::npos))
			<< b.id << ": " << commit;
		EXPECT_TRUE(b.fix_subject && *b.fix_subject) << b.id;
		EXPECT_EQ(find_known_bug(b.id), &b);
	}
}

TEST(Promises, EveryCaseChecksAPromise)
{
	std::set<std::string_view> checked;
	for (const auto &p : promise_table())
		checked.insert(p.cases.begin(), p.cases.end());
	for (const auto &id : all_case_ids())
		EXPECT_TRUE(checked.count(id)) << id << " checks no promise of the table";
}

TEST(Promises, EveryPromiseIsCheckedByACase)
{
	for (const auto &p : promise_table())
		EXPECT_FALSE(p.cases.empty()) << p.id << " is checked by no case";
}

TEST(Mutants, EachBreaksPromisesAndIsCaughtByTheirCases)
{
	std::set<std::string> ids;
	for (const auto &m : mutant_table()) {
		EXPECT_TRUE(ids.insert(m.id()).second) << m.id() << " twice";
		ASSERT_FALSE(m.breaks.empty()) << m.id();
		ASSERT_FALSE(m.caught_by.empty()) << m.id();
		std::set<std::string_view> cases_of_broken;
		for (const auto b : m.breaks) {
			const promise *p = promise_by_id(b);
			ASSERT_NE(p, nullptr) << m.id() << " breaks no promise " << b;
			cases_of_broken.insert(p->cases.begin(), p->cases.end());
		}
		for (const auto c : m.caught_by)
			EXPECT_TRUE(cases_of_broken.count(c))
				<< m.id() << ": " << c << " checks none of the promises it breaks";
	}
}

TEST(Mutants, EveryModelFaultBitHasOneRow)
{
	uint64_t all = 0;
	for (const auto &m : mutant_table()) {
		if (m.kind != mutant_kind::model_fault)
			continue;
		EXPECT_EQ(m.bit & (m.bit - 1), 0u) << m.id() << ": one bit";
		EXPECT_EQ(all & m.bit, 0u) << m.id() << ": its bit twice";
		all |= m.bit;
	}
	EXPECT_EQ(all, uint64_t(UALINK_SIM_FAULT_ALL)) << "a fault bit of uapi/ualink_sim.h without its row";
}

// Each kernel patch is some row's; a patch of the mutant kernel (rows with
// a boot value) knows every value its rows name, each value is one row's,
// and 0 is none's (the mutant kernel as it was).
TEST(Mutants, EveryKernelPatchHasItsRows)
{
	const fs::path patches = fs::path(PINMATRIX_SOURCE_DIR) / "matrix" / "patches";
	std::set<std::string> named;
	std::set<int> values;
	for (const auto &m : mutant_table()) {
		if (m.kind != mutant_kind::kernel_patch)
			continue;
		ASSERT_FALSE(m.patches.empty()) << m.id();
		if (m.boot_value) {
			EXPECT_TRUE(values.insert(m.boot_value).second) << m.id() << ": its boot value twice";
		}
		const std::string n = std::to_string(m.boot_value);
		for (const auto p : m.patches) {
			named.insert(std::string(p));
			std::ifstream in(patches / p);
			ASSERT_TRUE(in) << m.id() << ": no " << p;
			const std::string text((std::istreambuf_iterator<char>(in)), {});
			const bool knows = text.find("pinmatrix_mutant == " + n) != std::string::npos ||
					   text.find("pinmatrix_mutant != " + n) != std::string::npos;
			EXPECT_TRUE(!m.boot_value || knows) << p << " has no mutant " << n << " (" << m.id() << ")";
		}
	}
	EXPECT_FALSE(values.count(0));
	for (const auto &e : fs::directory_iterator(patches)) {
		if (e.path().extension() != ".patch")
			continue;
		EXPECT_TRUE(named.count(e.path().filename().string())) << e.path() << " has no row";
	}
}

TEST(Promises, AProofIsAMutantThatBreaksThePromiseAndIsCaughtByItsCase)
{
	const promise *p = promise_by_id("ualink/flags-reserved");
	ASSERT_NE(p, nullptr);
	std::set<std::string> proofs;
	for (const auto *m : proofs_of(*p))
		proofs.insert(m->id());
	EXPECT_EQ(proofs, (std::set<std::string>{"model:flags-unchecked", "model:peer-flags-unchecked"}));
	const promise *none = promise_by_id("ualink/abi-layout");
	ASSERT_NE(none, nullptr);
	EXPECT_TRUE(proofs_of(*none).empty());
}

TEST(PromisesCommand, PrintsEveryPromiseAndTheUncheckedOnes)
{
	const auto r = test::run_pinmatrix("promises");
	EXPECT_EQ(r.exit_code, 0) << r.output;
	for (const auto &p : promise_table())
		EXPECT_NE(r.output.find(std::string(p.id)), std::string::npos) << p.id;
	EXPECT_EQ(r.output.find("not checked by any case"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("checked by a case: " + std::to_string(promise_table().size())), std::string::npos)
		<< r.output;
}

TEST(PromisesCommand, JsonHoldsBothTablesAndTheirCounts)
{
	const auto r = test::run_pinmatrix("promises --contract ualink --format json");
	ASSERT_EQ(r.exit_code, 0) << r.output;
	const auto doc = nlohmann::json::parse(r.output);
	size_t ualink = 0, proved = 0;
	for (const auto &p : promise_table())
		if (p.of == contract::ualink) {
			ualink++;
			proved += !proofs_of(p).empty();
		}
	EXPECT_EQ(doc["promises"].size(), ualink);
	EXPECT_EQ(doc["summary"]["proved"], proved);
	EXPECT_EQ(doc["mutants"].size(), mutant_table().size());
	for (const auto &p : doc["promises"])
		EXPECT_EQ(p["contract"], "ualink");
}

TEST(PromisesCommand, UnprovedListsOnlyPromisesNoMutantProves)
{
	const auto r = test::run_pinmatrix("promises --unproved --format json");
	ASSERT_EQ(r.exit_code, 0) << r.output;
	for (const auto &p : nlohmann::json::parse(r.output)["promises"])
		EXPECT_TRUE(p["proved_by"].empty()) << p["id"];
}

TEST(PromisesCommand, BadArgumentsAreOneLineAndExit2)
{
	for (const char *args : {"promises --contract nfs", "promises --format xml", "promises extra"}) {
		const auto r = test::run_pinmatrix(args);
		EXPECT_EQ(r.exit_code, 2) << args;
		EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << args << ": " << r.output;
	}
}
