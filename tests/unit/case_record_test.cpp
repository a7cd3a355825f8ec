// SPDX-License-Identifier: GPL-2.0
// matrix/case_record.hpp: one record type for every suite, written and read
// back by one pair of functions.

#include <gtest/gtest.h>

#include "case_record.hpp"
#include "pin/pin_record.hpp"
#include "pin/pin_table.hpp"
#include "registration/registration_cases.hpp"
#include "sys_error.hpp"
#include "ualink/ualink_cases.hpp"

using namespace pinmatrix;
using nlohmann::json;

namespace {

// What a suite's judge wrote, written again from what it reads back.
void expect_round_trip(const case_record &r)
{
	const json j = to_json(r);
	const case_record back = case_record_from_json(j);
	EXPECT_EQ(to_json(back), j) << j.dump(1);
	EXPECT_EQ(back.outcome, r.outcome);
	EXPECT_EQ(back.reason, r.reason);
	EXPECT_EQ(back.details, r.details);
}

observation moved_page()
{
	observation o;
	o.before = {1, "movable", "Movable", "Movable", false, false, 1};
	o.after_first_pin = o.before;
	o.after_registration = {2, "ordinary", "DMA32", "Movable", true, true, 2};
	o.rdma_write_readback = true;
	o.latency_ns = 5000;
	return o;
}

} // namespace

TEST(CaseRecord, EverySuitesRecordSurvivesTheTripThroughJson)
{
	const auto &a = pin_cases().front();
	case_record pin = record_of(judge(a, moved_page()));
	pin.suite = "pin";
	pin.duration_ns = 123;
	pin.details["kernel_alarms"] = {"WARNING: at mm/gup.c"};
	expect_round_trip(pin);
	expect_round_trip(record_of(not_run(a, verdict::skip, "no device")));

	const auto &m = memlock::case_table().front();
	expect_round_trip(judge_row(memlock::definition, m, std::nullopt, {{"errno", 12}, {"latency_ns", 40}}));
	expect_round_trip(record_of_row(memlock::definition, m, std::nullopt, verdict::error, "guest died"));

	const auto &u = ualink::case_table().front();
	const json checked = {{"summary", "1 check ok"},
			      {"checks", {{{"what", "export"}, {"want", "0"}, {"got", "0"}, {"ok", true}}}},
			      {"facts", json::object()},
			      {"latency_ns", 77}};
	const case_record judged = judge_row(ualink::definition, u, std::nullopt, checked);
	EXPECT_EQ(judged.outcome, verdict::pass);
	EXPECT_EQ(judged.latency_ns, 77);
	expect_round_trip(judged);
}

TEST(CaseRecord, APassSaysNoReasonAndEveryOtherVerdictSaysOne)
{
	case_record r;
	r.id = "A";
	r.name = "movable-none";
	r.expected = {{"summary", "ok"}};
	r.outcome = verdict::pass;
	EXPECT_FALSE(to_json(r).contains("reason"));
	EXPECT_TRUE(to_json(r)["observed"].is_null());
	EXPECT_TRUE(to_json(r)["latency_ns"].is_null());
	r.outcome = verdict::fail;
	r.add_reason("ENOMEM, expected ok");
	r.add_reason("page stayed in ZONE_MOVABLE");
	EXPECT_EQ(to_json(r)["reason"], "ENOMEM, expected ok; page stayed in ZONE_MOVABLE");
}

TEST(CaseRecord, ABrokenRecordIsRefusedByTheFieldThatIsWrong)
{
	const json good = {{"id", "B"},	       {"name", "movable-foll-pin"}, {"verdict", "fail"},
			   {"reason", "x"},    {"expected", {{"summary", "ok"}}}, {"observed", nullptr},
			   {"latency_ns", nullptr}};
	ASSERT_NO_THROW(case_record_from_json(good));
	auto refused = [&](const char *key, const json &value, const std::string &why) {
		json bad = good;
		if (value.is_discarded())
			bad.erase(key);
		else
			bad[key] = value;
		try {
			case_record_from_json(bad);
			ADD_FAILURE() << key << " = " << value.dump() << ": read";
		} catch (const usage_error &e) {
			EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
		}
	};
	const json absent = json(json::value_t::discarded);
	refused("id", absent, "no id");
	refused("id", 7, "id is not a non-empty string");
	refused("verdict", "passed", "verdict \"passed\" is not pass, fail, xfail, xpass, skip or error");
	refused("expected", "ok", "expected is not an object with a summary");
	refused("observed", "ENOMEM", "observed is not an object or null");
	refused("latency_ns", -4, "latency_ns is not a count of nanoseconds or null");
	refused("duration_ns", 1.5, "duration_ns is not a count");
	EXPECT_THROW(case_record_from_json(json::array()), usage_error);
}

// A check that decided nothing makes no PASS: ERROR, unless a decided check
// FAILed the case, before or after.
TEST(CaseRecord, AnUndecidedCheckIsNoPass)
{
	case_record r;
	r.outcome = verdict::pass;
	r.undecided("the device writes", "the control registration failed (ENOMEM)");
	EXPECT_EQ(r.outcome, verdict::error);
	EXPECT_EQ(r.reason, "the device writes decided nothing: the control registration failed (ENOMEM)");

	case_record failed;
	failed.outcome = verdict::fail;
	failed.undecided("the give-back", "the memory did not go back with the pin released either");
	EXPECT_EQ(failed.outcome, verdict::fail) << "a decided FAIL stands";

	case_record skipped;
	skipped.outcome = verdict::skip;
	skipped.undecided("x", "y");
	EXPECT_EQ(skipped.outcome, verdict::error);
}
