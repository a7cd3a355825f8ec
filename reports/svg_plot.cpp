// SPDX-License-Identifier: GPL-2.0
#include "svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "report_input.hpp"

namespace pinmatrix::report {

namespace {

constexpr double width = 1200;
constexpr double label_w = 240;		// row labels
constexpr double note_w = 330;		// medians on the right
constexpr double plot_x0 = label_w + 10;
constexpr double plot_x1 = width - note_w - 10;
constexpr double axis_h = 34;
constexpr double heading_h = 26;
constexpr double lane_h = 16;
constexpr double row_pad = 8;

std::string num(double v)
{
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%.1f", v);
	return buf;
}

struct log_axis {
	double lo_log = 0, hi_log = 1;
	double x(double ns) const
	{
		const double l = std::log10(std::max(ns, 1.0));
		return plot_x0 + (l - lo_log) / (hi_log - lo_log) * (plot_x1 - plot_x0);
	}
	// 1-2-5 ticks inside the domain.
	std::vector<double> ticks() const
	{
		std::vector<double> out;
		for (int e = int(std::floor(lo_log)); e <= int(std::ceil(hi_log)); e++)
			for (double m : {1.0, 2.0, 5.0}) {
				const double v = m * std::pow(10.0, e);
				const double l = std::log10(v);
				if (l >= lo_log - 1e-9 && l <= hi_log + 1e-9)
					out.push_back(v);
			}
		return out;
	}
};

log_axis axis_for(const std::vector<plot_row> &rows)
{
	double lo = std::numeric_limits<double>::max(), hi = 0;
	for (const auto &r : rows)
		for (const auto &l : r.lanes)
			for (double s : l.samples) {
				lo = std::min(lo, std::max(s, 1.0));
				hi = std::max(hi, std::max(s, 1.0));
			}
	log_axis a;
	a.lo_log = std::floor(std::log10(lo));
	a.hi_log = std::ceil(std::log10(hi));
	// Pad a domain that ends right at the data: dots on the border hide.
	if (std::log10(lo) - a.lo_log < 0.05)
		a.lo_log -= 0.3;
	if (a.hi_log - std::log10(hi) < 0.05)
		a.hi_log += 0.3;
	return a;
}

// "100 µs", "2 ms", "1 s": a 1-2-5 tick needs no decimals.
std::string tick_label(double ns)
{
	char buf[32];
	if (ns < 1e3)
		std::snprintf(buf, sizeof(buf), "%.0f ns", ns);
	else if (ns < 1e6)
		std::snprintf(buf, sizeof(buf), "%.0f \u00b5s", ns / 1e3);
	else if (ns < 1e9)
		std::snprintf(buf, sizeof(buf), "%.0f ms", ns / 1e6);
	else
		std::snprintf(buf, sizeof(buf), "%.0f s", ns / 1e9);
	return buf;
}

bool has_samples(const std::vector<plot_row> &rows)
{
	bool any = false;
	for (const auto &r : rows)
		for (const auto &l : r.lanes)
			any |= !l.samples.empty();
	return any;
}

// A row that is not a heading: a lane per kernel, at least one.
double row_height(const plot_row &r)
{
	return double(std::max<size_t>(r.lanes.size(), 1)) * lane_h + row_pad;
}

double plot_height(const std::vector<plot_row> &rows)
{
	double height = axis_h;
	for (const auto &r : rows)
		height += r.heading ? heading_h : row_height(r);
	return height + 6;
}

// The row's label on the left (a link to its case when it has one), its
// note on the right.
void render_row_label(std::ostringstream &body, const plot_row &r, double mid)
{
	std::string label = "<text class=\"label" + std::string(r.aggregate ? " aggregate" : "") +
			    "\" x=\"" + num(label_w) + "\" y=\"" + num(mid) + "\" text-anchor=\"end\">" +
			    escape_markup(r.label) + "</text>";
	if (!r.link.empty())
		label = "<a href=\"" + escape_markup(r.link, true) + "\">" + label + "</a>";
	body << label << "\n";
	body << "<text class=\"note\" x=\"" << num(plot_x1 + 14) << "\" y=\"" << num(mid) << "\">"
	     << escape_markup(r.note) << "</text>\n";
}

// A lane's samples: the range as a line, from four samples the
// interquartile range as a band, every sample as a dot, the median as a bar.
void render_lane(std::ostringstream &body, const log_axis &axis, const plot_lane &lane, double lane_y,
		 bool aggregate)
{
	auto s = stats_of(lane.samples);
	if (!s)
		return;
	const std::string color = escape_markup(lane.color, true);
	if (s->n >= 2)
		body << "<line class=\"range\" x1=\"" << num(axis.x(s->min)) << "\" x2=\"" << num(axis.x(s->max))
		     << "\" y1=\"" << num(lane_y) << "\" y2=\"" << num(lane_y) << "\" stroke=\"" << color << "\"/>\n";
	if (s->n >= 4)
		body << "<rect class=\"iqr\" x=\"" << num(axis.x(s->p25)) << "\" y=\"" << num(lane_y - 5)
		     << "\" width=\"" << num(std::max(axis.x(s->p75) - axis.x(s->p25), 1.0))
		     << "\" height=\"10\" fill=\"" << color << "\"/>\n";
	for (double v : lane.samples)
		body << "<circle cx=\"" << num(axis.x(v)) << "\" cy=\"" << num(lane_y) << "\" r=\""
		     << (aggregate ? "3.5" : "4.5") << "\" fill=\"" << color << "\"><title>"
		     << escape_markup(lane.name + ": " + format_ns(v)) << "</title></circle>\n";
	if (s->n >= 2)
		body << "<line class=\"median\" x1=\"" << num(axis.x(s->median)) << "\" x2=\""
		     << num(axis.x(s->median)) << "\" y1=\"" << num(lane_y - 7) << "\" y2=\"" << num(lane_y + 7)
		     << "\"><title>" << escape_markup(lane.name + ": median " + format_ns(s->median))
		     << "</title></line>\n";
}

// A row at y: its stripe (every other row after a heading), label, note and
// lanes.
void render_row(std::ostringstream &back, std::ostringstream &body, const plot_row &r, const log_axis &axis,
		double y, bool striped)
{
	const double row_h = row_height(r);
	if (striped)
		back << "<rect class=\"stripe\" x=\"0\" y=\"" << num(y) << "\" width=\"" << width << "\" height=\""
		     << num(row_h) << "\"/>\n";
	render_row_label(body, r, y + row_h / 2 + 4);
	double lane_y = y + row_pad / 2 + lane_h / 2;
	for (const auto &lane : r.lanes) {
		render_lane(body, axis, lane, lane_y, r.aggregate);
		lane_y += lane_h;
	}
}

// The rows top to bottom: stripes into back, everything else into body.
void render_rows(std::ostringstream &back, std::ostringstream &body, const std::vector<plot_row> &rows,
		 const log_axis &axis)
{
	double y = axis_h;
	size_t stripe = 0;
	for (const auto &r : rows) {
		if (r.heading) {
			body << "<text class=\"heading\" x=\"4\" y=\"" << num(y + heading_h - 8) << "\">"
			     << escape_markup(r.label) << "</text>\n";
			y += heading_h;
			stripe = 0;
			continue;
		}
		render_row(back, body, r, axis, y, stripe++ % 2 == 0);
		y += row_height(r);
	}
}

// The time axis: a grid line and a label per tick.
void render_ticks(std::ostringstream &grid, const log_axis &axis, double height)
{
	for (double t : axis.ticks()) {
		const double x = axis.x(t);
		grid << "<line class=\"tick\" x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"" << num(axis_h - 6)
		     << "\" y2=\"" << num(height - 6) << "\"/>\n"
		     << "<text class=\"axis\" x=\"" << num(x) << "\" y=\"" << num(axis_h - 12)
		     << "\" text-anchor=\"middle\">" << escape_markup(tick_label(t)) << "</text>\n";
	}
}

} // namespace

std::string svg_dot_plot(const std::vector<plot_row> &rows, const std::string &description)
{
	if (!has_samples(rows))
		return "";
	const log_axis axis = axis_for(rows);
	const double height = plot_height(rows);
	std::ostringstream back, body, grid;
	render_rows(back, body, rows, axis);
	render_ticks(grid, axis, height);

	std::ostringstream svg;
	svg << "<svg class=\"plot\" viewBox=\"0 0 " << width << " " << num(height) << "\" width=\"" << width
	    << "\" height=\"" << num(height) << "\" role=\"img\" aria-label=\"" << escape_markup(description, true)
	    << "\">\n"
	    << "<title>" << escape_markup(description) << "</title>\n"
	    << back.str() << grid.str() << body.str()
	    << "<text class=\"axis\" x=\"4\" y=\"" << num(axis_h - 12) << "\">latency, log scale</text>\n"
	    << "</svg>\n";
	return svg.str();
}

} // namespace pinmatrix::report

namespace pinmatrix::report {

namespace {

// "4 KiB", "1 MiB", "1 GiB": powers of two.
std::string bytes_label(double b)
{
	char buf[32];
	if (b >= double(1ull << 30))
		std::snprintf(buf, sizeof(buf), "%.0f GiB", b / double(1ull << 30));
	else if (b >= double(1 << 20))
		std::snprintf(buf, sizeof(buf), "%.0f MiB", b / double(1 << 20));
	else if (b >= 1024)
		std::snprintf(buf, sizeof(buf), "%.0f KiB", b / 1024);
	else
		std::snprintf(buf, sizeof(buf), "%.0f B", b);
	return buf;
}

} // namespace

std::string svg_xy_plot(const std::vector<xy_series> &series, const std::string &description,
			const std::string &y_label)
{
	double x_lo = std::numeric_limits<double>::max(), x_hi = 0;
	double y_lo = std::numeric_limits<double>::max(), y_hi = 0;
	for (const auto &s : series)
		for (const auto &p : s.points)
			if (p.x > 0 && p.y > 0) {
				x_lo = std::min(x_lo, p.x), x_hi = std::max(x_hi, p.x);
				y_lo = std::min(y_lo, p.y), y_hi = std::max(y_hi, p.y);
			}
	if (x_hi <= 0)
		return "";
	constexpr double w = 900, h = 350, left = 78, right = 220, top = 28, bottom = 44;
	const double px0 = left, px1 = w - right, py0 = h - bottom, py1 = top;
	// x: whole powers of 4 around the data; y: whole decades.
	const double lx0 = std::floor(std::log2(x_lo) / 2) * 2, lx1 = std::max(lx0 + 2, std::ceil(std::log2(x_hi) / 2) * 2);
	const double ly0 = std::floor(std::log10(y_lo)), ly1 = std::max(ly0 + 1, std::ceil(std::log10(y_hi)));
	auto X = [&](double x) { return px0 + (std::log2(x) - lx0) / (lx1 - lx0) * (px1 - px0); };
	auto Y = [&](double y) { return py0 - (std::log10(y) - ly0) / (ly1 - ly0) * (py0 - py1); };

	std::ostringstream svg;
	svg << "<svg class=\"plot xy\" viewBox=\"0 0 " << w << " " << h << "\" width=\"" << w << "\" height=\"" << h
	    << "\" role=\"img\" aria-label=\"" << escape_markup(description, true) << "\">\n"
	    << "<title>" << escape_markup(description) << "</title>\n";
	for (double e = lx0; e <= lx1 + 1e-9; e += 2) {
		const double x = X(std::pow(2.0, e));
		svg << "<line class=\"tick\" x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"" << num(py1) << "\" y2=\""
		    << num(py0) << "\"/>\n<text class=\"axis\" x=\"" << num(x) << "\" y=\"" << num(py0 + 18)
		    << "\" text-anchor=\"middle\">" << escape_markup(bytes_label(std::pow(2.0, e))) << "</text>\n";
	}
	for (double e = ly0; e <= ly1 + 1e-9; e += 1) {
		const double y = Y(std::pow(10.0, e));
		svg << "<line class=\"tick\" x1=\"" << num(px0) << "\" x2=\"" << num(px1) << "\" y1=\"" << num(y) << "\" y2=\""
		    << num(y) << "\"/>\n<text class=\"axis\" x=\"" << num(px0 - 6) << "\" y=\"" << num(y + 4)
		    << "\" text-anchor=\"end\">" << escape_markup(tick_label(std::pow(10.0, e))) << "</text>\n";
	}
	svg << "<text class=\"axis\" x=\"" << num((px0 + px1) / 2) << "\" y=\"" << num(h - 6)
	    << "\" text-anchor=\"middle\">size, log scale</text>\n"
	    << "<text class=\"axis\" x=\"4\" y=\"14\">"
	    << escape_markup(y_label + ", log scale") << "</text>\n";
	double legend_y = top + 14;
	for (const auto &s : series) {
		std::vector<xy_series::point> pts;
		for (const auto &p : s.points)
			if (p.x > 0 && p.y > 0)
				pts.push_back(p);
		if (pts.empty())
			continue;
		std::sort(pts.begin(), pts.end(), [](const auto &a, const auto &b) { return a.x < b.x; });
		const std::string color = escape_markup(s.color, true);
		svg << "<polyline class=\"series\" fill=\"none\" stroke-width=\"2\" stroke=\"" << color << "\" points=\"";
		for (const auto &p : pts)
			svg << num(X(p.x)) << "," << num(Y(p.y)) << " ";
		svg << "\"/>\n";
		for (const auto &p : pts)
			svg << "<circle cx=\"" << num(X(p.x)) << "\" cy=\"" << num(Y(p.y)) << "\" r=\"4\" fill=\"" << color
			    << "\"><title>" << escape_markup(p.tip) << "</title></circle>\n";
		svg << "<rect x=\"" << num(px1 + 16) << "\" y=\"" << num(legend_y - 9) << "\" width=\"14\" height=\"4\" fill=\""
		    << color << "\"/>\n<text class=\"label\" x=\"" << num(px1 + 36) << "\" y=\"" << num(legend_y - 4) << "\">"
		    << escape_markup(s.name) << "</text>\n";
		legend_y += 18;
	}
	svg << "</svg>\n";
	return svg.str();
}

} // namespace pinmatrix::report
