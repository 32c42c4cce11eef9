// A tiny geometry library, built as libgeo.so: virtual calls, templates,
// a lambda through std::function, and inlined helpers, so that the crash
// in the demo has an interesting backtrace.
#pragma once

#include <functional>
#include <vector>

namespace geo {

struct Point {
  double x, y;
};

class Shape {
 public:
  explicit Shape(const char* name) : name_(name) {}
  virtual ~Shape() = default;
  virtual double area() const = 0;
  const char* name() const { return name_; }

 private:
  const char* name_;
};

class Square final : public Shape {
 public:
  Square(const char* name, double side) : Shape(name), side_(side) {}
  double area() const override;

 private:
  double side_;
};

class Polygon final : public Shape {
 public:
  Polygon(const char* name, const Point* points, int count)
      : Shape(name), points_(points), count_(count) {}
  double area() const override;

 private:
  const Point* points_;
  int count_;
};

// Sum of T(area) over the shapes that `keep` accepts.
template <typename T>
T sum_if(const std::vector<const Shape*>& shapes, const std::function<bool(const Shape&)>& keep);

// Total area of the shapes at least `min_area` large.
double total_area(const std::vector<const Shape*>& shapes, double min_area);

}  // namespace geo
