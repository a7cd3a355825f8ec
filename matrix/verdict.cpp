// SPDX-License-Identifier: GPL-2.0
#include "verdict.hpp"

namespace pinmatrix {

namespace {

constexpr verdict every_verdict[] = {verdict::error, verdict::fail, verdict::xpass,
				     verdict::xfail, verdict::skip,  verdict::pass};

} // namespace

const char *name(verdict v)
{
	switch (v) {
	case verdict::pass: return "pass";
	case verdict::fail: return "fail";
	case verdict::xpass: return "xpass";
	case verdict::xfail: return "xfail";
	case verdict::skip: return "skip";
	case verdict::error: return "error";
	}
	return "error";
}

const char *upper_name(verdict v)
{
	switch (v) {
	case verdict::pass: return "PASS";
	case verdict::fail: return "FAIL";
	case verdict::xpass: return "XPASS";
	case verdict::xfail: return "XFAIL";
	case verdict::skip: return "SKIP";
	case verdict::error: return "ERROR";
	}
	return "ERROR";
}

verdict verdict_of(std::string_view text)
{
	for (verdict v : every_verdict)
		if (text == name(v))
			return v;
	return verdict::error;
}

bool is_verdict_name(std::string_view text)
{
	for (verdict v : every_verdict)
		if (text == name(v))
			return true;
	return false;
}

verdict worst(verdict a, verdict b)
{
	auto rank = [](verdict v) {
		switch (v) {
		case verdict::error: return 5;
		case verdict::fail: return 4;
		case verdict::xpass: return 3;
		case verdict::xfail: return 2;
		case verdict::pass: return 1;
		case verdict::skip: return 0;
		}
		return 5;
	};
	return rank(a) >= rank(b) ? a : b;
}

bool counts_as_failure(verdict v)
{
	return v == verdict::fail || v == verdict::error;
}

} // namespace pinmatrix
