#include "geo.hpp"

#include <cmath>

namespace geo {
namespace {

// Inlined into Polygon::area at -O2: a fault here shows as inline frames.
inline double cross(const Point& a, const Point& b) { return a.x * b.y - a.y * b.x; }

template <typename It>
inline double shoelace(It first, int count) {
  double twice = 0;
  for (int i = 0; i < count; ++i) twice += cross(first[i], first[(i + 1) % count]);
  return twice / 2;
}

}  // namespace

double Square::area() const { return side_ * side_; }

double Polygon::area() const { return std::fabs(shoelace(points_, count_)); }

template <typename T>
__attribute__((noinline)) T sum_if(const std::vector<const Shape*>& shapes,
                                   const std::function<bool(const Shape&)>& keep) {
  T total{};
  for (const Shape* shape : shapes)
    if (keep(*shape)) total += static_cast<T>(shape->area());
  return total;
}

template double sum_if<double>(const std::vector<const Shape*>&,
                               const std::function<bool(const Shape&)>&);

double total_area(const std::vector<const Shape*>& shapes, double min_area) {
  return sum_if<double>(shapes, [min_area](const Shape& s) { return s.area() >= min_area; });
}

}  // namespace geo
