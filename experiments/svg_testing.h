// Test-only checks of a figure's SVG text, shared by every test that draws figures
// (svg_figures_test, front_page_test): one measure (TextWidth) and one rule for all of them.
#ifndef FGL_EXPERIMENTS_SVG_TESTING_H_
#define FGL_EXPERIMENTS_SVG_TESTING_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "experiments/svg_figures.h"
#include "gtest/gtest.h"

namespace fgl::experiments::svg_testing {

// One element's attributes, e.g. {"x": "10", "fill": "#eee"}.
inline std::map<std::string, std::string> Attributes(const std::string& tag) {
  std::map<std::string, std::string> out;
  for (size_t eq = tag.find("=\""); eq != std::string::npos; eq = tag.find("=\"", eq + 1)) {
    size_t name = eq;
    while (name > 0 && tag[name - 1] != ' ') --name;
    const size_t end = tag.find('"', eq + 2);
    out[tag.substr(name, eq - name)] = tag.substr(eq + 2, end - eq - 2);
    eq = end;
  }
  return out;
}

// Every element named `name` (its opening tag) and, for <text>, its content.
struct Element {
  std::map<std::string, std::string> attributes;
  std::string content;
};
inline std::vector<Element> Elements(const std::string& svg, const std::string& name) {
  std::vector<Element> out;
  const std::string open = "<" + name + " ";
  for (size_t at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const size_t close = svg.find('>', at);
    Element e{Attributes(svg.substr(at, close - at)), ""};
    if (svg[close - 1] != '/') e.content = svg.substr(close + 1, svg.find("</" + name + ">", close) - close - 1);
    out.push_back(std::move(e));
  }
  return out;
}

// The root <svg>'s attribute `name` as a number ("width", "height").
inline double Dimension(const std::string& svg, const std::string& name) {
  return std::stod(Elements(svg, "svg").at(0).attributes.at(name));
}

struct Box {
  double x0, x1, y0, y1;
  std::string text;
};

// Each <text>'s extent by TextWidth: from 0.9 em above its baseline to 0.25 em below, turned with
// the text where it is rotated by -90° about its anchor (the y axis's name). A text without its own
// font-size has the root <svg>'s (11 where the root sets none), as a renderer inherits it.
inline std::vector<Box> TextBoxes(const std::string& svg) {
  std::vector<Box> out;
  const std::map<std::string, std::string> root = Elements(svg, "svg").at(0).attributes;
  const double root_size = root.count("font-size") ? std::stod(root.at("font-size")) : 11;
  for (const Element& e : Elements(svg, "text")) {
    const auto& a = e.attributes;
    const double x = std::stod(a.at("x")), y = std::stod(a.at("y"));
    const double size = a.count("font-size") ? std::stod(a.at("font-size")) : root_size;
    const std::string text = absl::StrReplaceAll(e.content, {{"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}});
    const double w = TextWidth(text, size);
    const std::string anchor = a.count("text-anchor") ? a.at("text-anchor") : "start";
    const double start = anchor == "middle" ? -w / 2 : anchor == "end" ? -w : 0;
    if (a.count("transform")) {
      EXPECT_EQ(a.at("transform"), absl::StrCat("rotate(-90 ", a.at("x"), " ", a.at("y"), ")"));
      out.push_back({x - 0.9 * size, x + 0.25 * size, y - start - w, y - start, text});
    } else {
      out.push_back({x + start, x + start + w, y - 0.9 * size, y + 0.25 * size, text});
    }
  }
  return out;
}

// Every text inside the canvas and clear of every other.
inline void ExpectTextFitsAndIsApart(const std::string& name, const std::string& svg) {
  const double w = Dimension(svg, "width"), h = Dimension(svg, "height");
  const std::vector<Box> boxes = TextBoxes(svg);
  ASSERT_FALSE(boxes.empty()) << name;
  for (size_t i = 0; i < boxes.size(); ++i) {
    const Box& b = boxes[i];
    EXPECT_TRUE(b.x0 >= 0 && b.x1 <= w && b.y0 >= 0 && b.y1 <= h)
        << name << ": \"" << b.text << "\" spans x " << b.x0 << " to " << b.x1 << ", y " << b.y0 << " to " << b.y1
        << " on a canvas of " << w << " × " << h;
    for (size_t j = 0; j < i; ++j) {
      const Box& o = boxes[j];
      const bool apart = b.x1 <= o.x0 + 0.5 || o.x1 <= b.x0 + 0.5 || b.y1 <= o.y0 + 0.5 || o.y1 <= b.y0 + 0.5;
      EXPECT_TRUE(apart) << name << ": \"" << b.text << "\" overlaps \"" << o.text << "\"";
    }
  }
}

}  // namespace fgl::experiments::svg_testing

#endif  // FGL_EXPERIMENTS_SVG_TESTING_H_
