// SPDX-License-Identifier: GPL-2.0
#include "manpage.hpp"

#include <CLI/CLI.hpp>

#include <sstream>

namespace pinmatrix {

namespace {

// CLI11 hides an option or a subcommand by giving it no group.
bool shown(const CLI::Option *o) { return !o->get_group().empty(); }
bool shown(const CLI::App *a) { return !a->get_group().empty(); }

std::string option_names(const CLI::Option *o)
{
	std::string names = o->nonpositional() ? o->get_name(false, true) : o->get_name(true);
	std::string out;
	for (std::string_view rest = names; !rest.empty();) {
		const size_t comma = rest.find(',');
		out += (out.empty() ? "" : ", ") + std::string("\\fB") + roff_text(rest.substr(0, comma)) + "\\fR";
		rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
	}
	return out;
}

void write_option(std::ostream &out, const CLI::Option *o)
{
	out << ".TP\n" << option_names(o);
	if (const std::string type = o->get_type_name(); !type.empty() && o->get_type_size() != 0)
		out << " \\fI" << roff_text(type) << "\\fR";
	out << "\n" << roff_text(o->get_description());
	if (o->get_required())
		out << " (required)";
	if (const std::string def = o->get_default_str(); !def.empty())
		out << " (default: " << roff_text(def) << ")";
	out << "\n";
}

// One command's section; its subcommands after it, by their full name.
void write_command(std::ostream &out, const CLI::App *cmd, const std::string &path)
{
	out << ".SS " << roff_text(path) << "\n" << roff_text(cmd->get_description()) << "\n";
	const CLI::Option *help = cmd->get_help_ptr();
	for (const CLI::Option *o : cmd->get_options([&](const CLI::Option *o) { return shown(o) && o != help; }))
		write_option(out, o);
	if (const std::string footer = cmd->get_footer(); !footer.empty())
		out << ".PP\n" << roff_text(footer) << "\n";
	for (const CLI::App *sub : cmd->get_subcommands([](const CLI::App *a) { return shown(a); }))
		write_command(out, sub, path + " " + sub->get_name());
}

constexpr const char *description =
	"pinmatrix checks that a page passes its strongest placement contract (ZONE_MOVABLE, "
	"MIGRATE_CMA) before a long-term pin (an RDMA registration, ibv_reg_mr with FOLL_LONGTERM) "
	"makes it immovable, and that the UALink export, import and revoke ioctls keep their "
	"promises. It runs its cases on this machine (run) or in a QEMU guest of any kernel (vm), "
	"judges each against the expectations of that kernel (known kernel bugs included), and "
	"writes KTAP, JUnit, KCIDB, HTML and Markdown reports.";

constexpr const char *files =
	".TP\n/dev/pinmatrix\nThe test module's device (pinmatrix.ko, from the pinmatrix\\-dkms package).\n"
	".TP\n/usr/share/pinmatrix/\nThe guest's scripts, the Kconfig fragments, the modules' sources, "
	"the matrix files and the results schema.\n"
	".TP\n/usr/share/doc/pinmatrix/\nREADME.md and docs/: how to read a report, the cases, the "
	"kernels, the fleet.\n";

} // namespace

std::string roff_text(std::string_view s)
{
	std::string out;
	out.reserve(s.size() + s.size() / 8);
	bool line_start = true;
	for (char c : s) {
		if (line_start && (c == '.' || c == '\''))
			out += "\\&";
		line_start = c == '\n';
		switch (c) {
		case '\\': out += "\\e"; break;
		case '-': out += "\\-"; break;
		case '"': out += "\\(dq"; break;
		default: out += c;
		}
	}
	return out;
}

std::string manpage(const CLI::App &app, std::string_view version, std::string_view date)
{
	std::ostringstream out;
	out << ".TH PINMATRIX 1 \"" << roff_text(date) << "\" \"pinmatrix " << roff_text(version)
	    << "\" \"User Commands\"\n"
	    << ".SH NAME\npinmatrix \\- conformance suite for the device\\-memory pin contracts of Linux\n"
	    << ".SH SYNOPSIS\n.B pinmatrix\n.I COMMAND\n[\\fIOPTIONS\\fR]\n.br\n.B pinmatrix\n"
	    << "\\fB\\-\\-help\\fR | \\fB\\-\\-version\\fR\n"
	    << ".SH DESCRIPTION\n" << roff_text(description) << "\n.PP\n" << roff_text(app.get_description())
	    << "\n.SH COMMANDS\n";
	for (const CLI::App *cmd : app.get_subcommands([](const CLI::App *a) { return shown(a); }))
		write_command(out, cmd, "pinmatrix " + cmd->get_name());
	out << ".SH EXIT STATUS\nEach command's own, listed under it above and at the end of its "
	    << "\\fB\\-\\-help\\fR.\n.SH FILES\n" << files
	    << ".SH SEE ALSO\n.BR pinmatrix_bench (1),\n.BR dkms (8),\n.BR ibv_devices (1)\n";
	return out.str();
}

} // namespace pinmatrix
