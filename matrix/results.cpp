// SPDX-License-Identifier: GPL-2.0
#include "results.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "atomic_file.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

using nlohmann::json;

json to_json(const page_state &p)
{
	return {{"pfn", p.pfn},
		{"placement", p.placement},
		{"zone", p.zone},
		{"migratetype", p.migratetype},
		{"longterm_pinnable", p.longterm_pinnable ? json(*p.longterm_pinnable) : json(nullptr)},
		{"maybe_dma_pinned", p.maybe_dma_pinned},
		{"refcount", p.refcount},
		{"cma_area", p.cma_area.empty() ? json(nullptr) : json(p.cma_area)}};
}

page_state page_state_from_json(const json &j)
{
	page_state p;
	p.pfn = j.at("pfn");
	p.placement = j.at("placement");
	p.zone = j.at("zone");
	p.migratetype = j.at("migratetype");
	if (const auto &lp = j.at("longterm_pinnable"); !lp.is_null())
		p.longterm_pinnable = lp.get<bool>();
	p.maybe_dma_pinned = j.at("maybe_dma_pinned");
	p.refcount = j.at("refcount");
	if (j.contains("cma_area") && j["cma_area"].is_string())
		p.cma_area = j["cma_area"];
	return p;
}

json to_json(const observation &o)
{
	json j = {{"errno", o.registration_errno},
		  {"errno_name", errno_name(o.registration_errno)},
		  {"migrated", o.migrated_by_first_pin() || o.migrated_by_registration()},
		  {"migrated_by_first_pin", o.migrated_by_first_pin()},
		  {"migrated_by_registration", o.migrated_by_registration()},
		  {"pfn_before", o.before.pfn},
		  {"pfn_after", o.pfn_after()},
		  {"first_pin_errno", o.first_pin_errno},
		  {"first_pin_pfns", o.first_pin_pfns},
		  {"latency_ns", o.latency_ns},
		  {"scanned_bytes", o.scanned_bytes},
		  {"summary", o.summary()},
		  {"page", {{"before", to_json(o.before)}}}};
	if (o.after_first_pin)
		j["page"]["after_first_pin"] = to_json(*o.after_first_pin);
	if (o.after_registration)
		j["page"]["after_registration"] = to_json(*o.after_registration);
	if (o.rdma_write_readback)
		j["rdma_write_readback"] = *o.rdma_write_readback;
	if (!o.rdma_detail.empty())
		j["rdma_detail"] = o.rdma_detail;
	if (o.content_intact)
		j["content_intact"] = *o.content_intact;
	if (o.recovery)
		j["recovery"] = {{"errno", o.recovery->errno_value},
				 {"latency_ns", o.recovery->latency_ns},
				 {"pfn_after", o.recovery->pfn_after}};
	if (!o.first_pinner.empty())
		j["first_pinner"] = o.first_pinner;
	if (!o.first_pin_detail.empty())
		j["first_pin_detail"] = o.first_pin_detail;
	if (o.longterm_by_version)
		j["longterm_by_version"] = *o.longterm_by_version;
	if (!o.readback_method.empty())
		j["readback_method"] = o.readback_method;
	return j;
}

observation observation_from_json(const json &j)
{
	observation o;
	o.registration_errno = j.at("errno");
	o.first_pin_errno = j.at("first_pin_errno");
	o.first_pin_pfns = j.at("first_pin_pfns").get<std::vector<uint64_t>>();
	o.latency_ns = j.at("latency_ns");
	o.scanned_bytes = j.at("scanned_bytes");
	const auto &page = j.at("page");
	o.before = page_state_from_json(page.at("before"));
	if (page.contains("after_first_pin"))
		o.after_first_pin = page_state_from_json(page["after_first_pin"]);
	if (page.contains("after_registration"))
		o.after_registration = page_state_from_json(page["after_registration"]);
	if (j.contains("rdma_write_readback"))
		o.rdma_write_readback = j["rdma_write_readback"].get<bool>();
	o.rdma_detail = j.value("rdma_detail", "");
	if (j.contains("content_intact"))
		o.content_intact = j["content_intact"].get<bool>();
	if (j.contains("recovery")) {
		const auto &r = j["recovery"];
		o.recovery = recovery_record{r.at("errno"), r.at("latency_ns"), r.at("pfn_after")};
	}
	o.first_pinner = j.value("first_pinner", "");
	o.first_pin_detail = j.value("first_pin_detail", "");
	if (j.contains("longterm_by_version"))
		o.longterm_by_version = j["longterm_by_version"].get<bool>();
	o.readback_method = j.value("readback_method", "");
	return o;
}

json to_json(const case_result &r)
{
	const auto &e = r.expected;
	json j = {{"id", r.def.id},
		  {"name", r.def.name},
		  {"placement", name(r.def.where)},
		  {"first_pin", name(r.def.first)},
		  {"first_pin_label", traits(r.def.first).label},
		  {"second_pin", r.def.second_pin},
		  {"expected",
		   {{"errno", e.registration_errno},
		    {"first_pin_migrates", e.first_pin_migrates},
		    {"registration_migrates", e.registration_migrates},
		    {"first_pin_contract", e.contract},
		    {"contract_source", e.contract_source},
		    {"summary", e.summary()}}},
		  {"observed", r.observed ? to_json(*r.observed) : json(nullptr)},
		  {"latency_ns", r.observed ? json(r.observed->latency_ns) : json(nullptr)},
		  {"duration_ns", r.duration_ns},
		  {"verdict", name(r.outcome)}};
	if (r.outcome != verdict::pass || !r.reason.empty())
		j["reason"] = r.reason;
	return j;
}

namespace {

verdict parse_verdict(const std::string &s)
{
	for (verdict v : {verdict::pass, verdict::fail, verdict::skip, verdict::error})
		if (s == name(v))
			return v;
	return verdict::error;
}

void count(run_summary &s, verdict v)
{
	switch (v) {
	case verdict::pass: s.pass++; break;
	case verdict::fail: s.fail++; break;
	case verdict::skip: s.skip++; break;
	case verdict::error: s.error++; break;
	}
	s.overall = worst(s.overall, v);
}

} // namespace

run_summary summarize_json(const json &cases)
{
	run_summary s;
	for (const auto &c : cases)
		count(s, parse_verdict(c.value("verdict", "error")));
	return s;
}

int exit_code(const run_summary &s)
{
	if (s.fail || s.error)
		return 1;
	if (!s.pass)
		return 4;
	return 0;
}

void write_json_atomically(const std::filesystem::path &path, const json &doc)
{
	write_file_atomically(path, doc.dump(2) + '\n');
}

namespace {

// Whether text nests arrays and objects deeper than max (outside strings).
bool nested_deeper_than(std::string_view text, size_t max)
{
	size_t depth = 0;
	bool in_string = false;
	for (size_t i = 0; i < text.size(); i++) {
		const char ch = text[i];
		if (in_string) {
			if (ch == '\\')
				i++;
			else if (ch == '"')
				in_string = false;
		} else if (ch == '"') {
			in_string = true;
		} else if (ch == '[' || ch == '{') {
			if (++depth > max)
				return true;
		} else if ((ch == ']' || ch == '}') && depth) {
			depth--;
		}
	}
	return false;
}

} // namespace

json read_json(const std::filesystem::path &path)
{
	std::error_code ec;
	const uintmax_t size = std::filesystem::file_size(path, ec);
	if (ec)
		throw usage_error(path.string() + ": cannot read it (" + ec.message() + ")");
	if (size > max_json_bytes)
		throw usage_error(path.string() + ": larger than " + std::to_string(max_json_bytes >> 20) +
				  " MiB (" + std::to_string(size) + " bytes): not a results document");
	std::ifstream in(path, std::ios::binary);
	std::string text(size_t(size), '\0');
	if (!in || !in.read(text.data(), std::streamsize(text.size())))
		throw usage_error(path.string() + ": cannot read it");
	if (nested_deeper_than(text, max_json_depth))
		throw usage_error(path.string() + ": nested deeper than " + std::to_string(max_json_depth) +
				  " levels: not a results document");
	try {
		return json::parse(text);
	} catch (const json::exception &e) {
		throw usage_error(path.string() + ": not valid JSON (" + e.what() + ")");
	}
}

std::string format_table(const json &cases)
{
	const std::vector<std::string> head = {"case",	   "placement", "first pin", "second pin",
					       "expected", "observed",	"verdict"};
	std::vector<std::vector<std::string>> rows;
	for (const auto &c : cases) {
		std::string observed = c["observed"].is_object()
					       ? c["observed"].value("summary", "")
					       : "-";
		std::string v = c.value("verdict", "error");
		std::transform(v.begin(), v.end(), v.begin(), ::toupper);
		const json expected = c.value("expected", json::object());
		rows.push_back({c.value("id", "?"), c.value("placement", "-"),
				c.value("first_pin_label", "-"), c.value("second_pin", "-"),
				expected.is_object() ? expected.value("summary", "-") : "-", observed, v});
	}
	std::vector<size_t> width(head.size());
	for (size_t i = 0; i < head.size(); i++) {
		width[i] = head[i].size();
		for (const auto &r : rows)
			width[i] = std::max(width[i], r[i].size());
	}
	std::ostringstream out;
	auto line = [&](const std::vector<std::string> &r) {
		for (size_t i = 0; i < r.size(); i++) {
			out << r[i];
			if (i + 1 < r.size())
				out << std::string(width[i] - r[i].size() + 2, ' ');
		}
		out << '\n';
	};
	line(head);
	for (const auto &r : rows)
		line(r);
	for (const auto &c : cases)
		if (c.contains("reason") && !c["reason"].get<std::string>().empty())
			out << "  " << c.value("id", "?") << ": " << c["verdict"].get<std::string>()
			    << ": " << c["reason"].get<std::string>() << '\n';
	return out.str();
}

} // namespace pinmatrix
