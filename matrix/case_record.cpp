// SPDX-License-Identifier: GPL-2.0
#include "case_record.hpp"

#include "sys_error.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

// The fields case_record names; every other one is a detail.
const char *const envelope[] = {"id",	      "name",	     "suite",	"expected", "observed",
				"latency_ns", "duration_ns", "verdict", "reason"};

bool in_envelope(const std::string &key)
{
	for (const char *k : envelope)
		if (key == k)
			return true;
	return false;
}

[[noreturn]] void refuse(const json &j, const std::string &what)
{
	const std::string id = j.contains("id") && j["id"].is_string() ? " " + j["id"].get<std::string>() : "";
	throw usage_error("case record" + id + ": " + what);
}

std::string text(const json &j, const char *key, bool required)
{
	if (!j.contains(key)) {
		if (required)
			refuse(j, std::string("no ") + key);
		return "";
	}
	if (!j[key].is_string() || (required && j[key].get_ref<const std::string &>().empty()))
		refuse(j, std::string(key) + " is not a non-empty string");
	return j[key];
}

std::optional<int64_t> count_or_null(const json &j, const char *key)
{
	if (!j.contains(key) || j[key].is_null())
		return std::nullopt;
	if (!j[key].is_number_integer() || j[key].get<int64_t>() < 0)
		refuse(j, std::string(key) + " is not a count of nanoseconds or null");
	return j[key].get<int64_t>();
}

} // namespace

void case_record::add_reason(const std::string &why)
{
	reason += (reason.empty() ? "" : "; ") + why;
}

void case_record::undecided(const std::string &check, const std::string &why)
{
	if (outcome != verdict::fail)
		outcome = verdict::error;
	add_reason(check + " decided nothing: " + why);
}

json to_json(const case_record &r)
{
	json j = r.details;
	j["id"] = r.id;
	j["name"] = r.name;
	if (!r.suite.empty())
		j["suite"] = r.suite;
	j["expected"] = r.expected;
	j["observed"] = r.observed ? *r.observed : json(nullptr);
	j["latency_ns"] = r.latency_ns ? json(*r.latency_ns) : json(nullptr);
	if (r.duration_ns)
		j["duration_ns"] = *r.duration_ns;
	j["verdict"] = name(r.outcome);
	if (r.outcome != verdict::pass || !r.reason.empty())
		j["reason"] = r.reason;
	return j;
}

case_record case_record_from_json(const json &j)
{
	if (!j.is_object())
		throw usage_error("case record: not a JSON object");
	case_record r;
	r.id = text(j, "id", true);
	r.name = text(j, "name", true);
	r.suite = text(j, "suite", false);
	const std::string v = text(j, "verdict", true);
	r.outcome = verdict_of(v);
	if (name(r.outcome) != v)
		refuse(j, "verdict \"" + v + "\" is not pass, fail, xfail, xpass, skip or error");
	r.reason = text(j, "reason", false);
	if (!j.contains("expected") || !j["expected"].is_object() || !j["expected"].contains("summary"))
		refuse(j, "expected is not an object with a summary");
	r.expected = j["expected"];
	if (j.contains("observed") && !j["observed"].is_null()) {
		if (!j["observed"].is_object())
			refuse(j, "observed is not an object or null");
		r.observed = j["observed"];
	}
	r.latency_ns = count_or_null(j, "latency_ns");
	r.duration_ns = count_or_null(j, "duration_ns");
	for (const auto &[key, value] : j.items())
		if (!in_envelope(key))
			r.details[key] = value;
	return r;
}

} // namespace pinmatrix
