#include "experiments/svg_figures.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "experiments/svg_figures_samples.h"
#include "experiments/svg_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fgl::experiments {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using svg_testing::Dimension;
using svg_testing::Element;
using svg_testing::Elements;
using svg_testing::ExpectTextFitsAndIsApart;

std::string Sample(const std::string& name) {
  for (const auto& [file, svg] : SampleFigures()) {
    if (file == name) return svg;
  }
  ADD_FAILURE() << "no sample " << name;
  return "";
}

TEST(SvgFiguresTest, TextWidthIsGenerousAndCountsCharactersNotBytes) {
  EXPECT_DOUBLE_EQ(TextWidth("mmm", 10), 30);
  EXPECT_DOUBLE_EQ(TextWidth("±", 10), 10);  // two bytes, one character
  EXPECT_DOUBLE_EQ(TextWidth("—", 10), 10);  // three bytes
  EXPECT_DOUBLE_EQ(TextWidth("a1", 10), 13.2);
  EXPECT_DOUBLE_EQ(TextWidth("il", 10), 9);
  EXPECT_DOUBLE_EQ(TextWidth("O", 10), 8);
  // rsvg-convert renders this line of DejaVu Sans 449 px wide at 11 px (README.md).
  EXPECT_GE(TextWidth("Performance comparison of methods with clients of different model architectures", 11), 449);
}

TEST(SvgFiguresTest, WrapTextBreaksAtSpacesAndShortensBeyondItsLines) {
  const std::vector<std::string> lines = WrapText("alpha beta gamma delta", 10, 70, 0);
  EXPECT_EQ(lines, (std::vector<std::string>{"alpha beta", "gamma", "delta"}));
  for (const std::string& line : lines) EXPECT_LE(TextWidth(line, 10), 70);
  const std::vector<std::string> two = WrapText("alpha beta gamma delta", 10, 70, 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1], "gamma…");
  // A word wider than the line is cut, whole UTF-8 characters at a time.
  const std::vector<std::string> cut = WrapText("±±±±±", 10, 25, 0);
  EXPECT_EQ(cut, (std::vector<std::string>{"±±", "±±", "±"}));
  EXPECT_EQ(WrapText("", 10, 25, 1), std::vector<std::string>{});
}

TEST(SvgFiguresTest, PaletteNeverRepeats) {
  const std::vector<std::string> colors = Palette(60);
  EXPECT_EQ(std::set<std::string>(colors.begin(), colors.end()).size(), 60u);
  EXPECT_EQ(colors[0], "#1f77b4");
  for (const std::string& c : colors) EXPECT_THAT(c, ::testing::MatchesRegex("#[0-9a-f]{6}"));
}

TEST(SvgFiguresTest, EverySampleKeepsItsTextInsideAndApart) {
  for (const auto& [name, svg] : SampleFigures()) {
    ASSERT_FALSE(svg.empty()) << name;
    ExpectTextFitsAndIsApart(name, svg);
  }
}

// Convergence: every seed faint, the mean bold, one colour per row, a title that wraps, both axes
// named.
TEST(SvgFiguresTest, CurvesDrawEverySeedFaintAndTheMeanBold) {
  const std::string svg = Sample("curves_many_series.svg");
  int faint = 0, bold = 0;
  std::set<std::string> bold_colors;
  for (const Element& e : Elements(svg, "polyline")) {
    if (e.attributes.count("stroke-opacity")) {
      ++faint;
    } else {
      ++bold;
      bold_colors.insert(e.attributes.at("stroke"));
      EXPECT_EQ(e.attributes.at("stroke-width"), "2.2");
    }
  }
  EXPECT_EQ(faint, 36);  // 12 rows × 3 seeds
  EXPECT_EQ(bold, 12);
  EXPECT_EQ(bold_colors.size(), 12u);
  EXPECT_THAT(svg, HasSubstr(">bold: the mean over seeds; faint: each seed<"));
  EXPECT_THAT(svg, HasSubstr(">round<"));
  EXPECT_THAT(svg, HasSubstr("rotate(-90 14 "));
  EXPECT_THAT(svg, HasSubstr(">test accuracy (%)<"));
  // The title is on several lines, its last words kept.
  EXPECT_THAT(svg, HasSubstr("every row (3 seeds)</text>"));
  EXPECT_THAT(svg, HasSubstr(">a&lt;b &amp; c&gt;<"));  // a legend label, escaped
  EXPECT_THAT(svg, HasSubstr(">FedGKC with knowledge-aware"));
  EXPECT_THAT(svg, Not(HasSubstr("more words")));  // too long for two lines: shortened with "…"
  EXPECT_THAT(svg, HasSubstr("…</text>"));
  EXPECT_THAT(Sample("curves_loss.svg"), HasSubstr(">training loss (log scale)<"));
  const std::string one = Sample("curves_one_series.svg");
  EXPECT_THAT(one, HasSubstr("a&lt;b &amp; c"));
  EXPECT_THAT(one, Not(HasSubstr("stroke-opacity")));  // no seeds given, none drawn
}

// FedMpa Fig. 3's 27 columns wrap onto panels no wider than kMaxGridWidth, every square drawn.
TEST(SvgFiguresTest, WideGridWrapsOntoPanels) {
  const std::string svg = Sample("grid_wide.svg");
  EXPECT_LE(Dimension(svg, "width"), kMaxGridWidth);
  int squares = 0;
  for (const Element& e : Elements(svg, "rect")) {
    if (e.attributes.count("height") && e.attributes.at("height") == "34.0") {
      ++squares;
      EXPECT_LE(std::stod(e.attributes.at("x")) + std::stod(e.attributes.at("width")), kMaxGridWidth);
    }
  }
  EXPECT_EQ(squares, 3 * 27);
  EXPECT_THAT(svg, HasSubstr(">–<"));  // the empty square
  // Each panel repeats the row labels: FedMpa once per panel.
  const size_t panels = Elements(svg, "text").size();
  int fedmpa = 0;
  for (const Element& e : Elements(svg, "text")) fedmpa += e.content == "FedMpa";
  EXPECT_GE(fedmpa, 3) << panels;
}

// The scale spans at least 4 × the largest seed std and, for accuracies, 4 points: FedGKC Fig. 4(a)'s
// 1.5-point range of means no longer runs from white to the darkest blue.
TEST(SvgFiguresTest, GridScaleIsNeverNarrowerThanTheSeeds) {
  proto::Table t;
  t.set_metric("acc");
  for (const char* r : {"a1", "a2"}) t.add_rows()->set_key(r);
  t.add_columns()->set_key("b1");
  auto done = [](std::vector<double> v) {
    CellResult r;
    r.state = CellResult::State::kDone;
    r.values = std::move(v);
    return r;
  };
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  cells[{"a1", "b1"}] = done({80.0, 81.0});  // mean 80.5, std 0.71
  cells[{"a2", "b1"}] = done({81.5, 82.5});  // mean 82.0
  EXPECT_DOUBLE_EQ(GridColourSpan(t, cells), 4);  // the 4-point floor over a 1.5-point range
  std::string svg = GridHeatmapSvg(t, cells);
  EXPECT_THAT(svg, HasSubstr("colour scale 79.2 (white) to 83.2 (dark blue)"));
  for (const Element& e : Elements(svg, "rect")) {
    if (e.attributes.at("height") != "34.0") continue;  // the scale's swatches
    EXPECT_NE(e.attributes.at("fill"), "rgb(255,255,255)");
    EXPECT_NE(e.attributes.at("fill"), "rgb(30,100,255)");
  }
  // Seeds 10 points apart: the scale spans 4 × their std, wider than the range of the means.
  cells[{"a1", "b1"}] = done({70.0, 80.0, 90.0});  // std 10
  EXPECT_DOUBLE_EQ(GridColourSpan(t, cells), 40);
  // Not an accuracy (the cells' own value, as a column may set it): no floor, only the seeds and the
  // means.
  cells[{"a1", "b1"}] = done({0.5, 0.5});
  cells[{"a2", "b1"}] = done({0.6, 0.6});
  EXPECT_DOUBLE_EQ(GridColourSpan(t, cells), 4);
  for (auto& [key, r] : cells) r.value = proto::Table::CLIENT_REPORT;
  EXPECT_NEAR(GridColourSpan(t, cells), 0.1, 1e-12);
  EXPECT_EQ(GridColourSpan(t, {}), 0);
}

// Weight divergences of a few hundredths keep two significant digits (once "0.0 ± 0.0").
TEST(SvgFiguresTest, GridShowsSmallValuesWithSignificantDigits) {
  const std::string svg = Sample("grid_small_values.svg");
  EXPECT_THAT(svg, HasSubstr(">0.020 ± 0.001<"));
  EXPECT_THAT(svg, HasSubstr(">0.800 ± 0.000<"));
  EXPECT_THAT(svg, Not(HasSubstr("4 points")));  // not an accuracy: no floor
}

// Fidelity: a dozen rows, a dozen colours, every label in the canvas.
TEST(SvgFiguresTest, FidelityGivesEveryRowItsOwnColour) {
  const std::string svg = Sample("fidelity_many_rows.svg");
  std::set<std::string> fills;
  for (const Element& e : Elements(svg, "circle")) fills.insert(e.attributes.at("fill"));
  EXPECT_EQ(fills.size(), 12u);
  EXPECT_EQ(Elements(svg, "circle").size(), 24u);
  EXPECT_THAT(svg, HasSubstr(">FedSage+ with the"));
  EXPECT_THAT(svg, HasSubstr("&lt;long&gt;</text>"));  // a long label on a second line, whole
  EXPECT_THAT(Sample("fidelity_fraction.svg"), HasSubstr("shaded: within ±0.02"));
}

}  // namespace
}  // namespace fgl::experiments
