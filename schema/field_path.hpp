#pragma once
// A field path (`tiles[12].segments[3].blobOffset`) that is spelled out only
// when an error names it. The reader and the validator visit every record of
// a package, millions of them in a whole-chip model; formatting each one's
// path up front, on the way to finding it valid, cost more than the checks
// themselves. A FieldPath is a chain of links on the stack instead, each a
// field name with an optional list index (`segments[3]`) and a pointer to
// the link before it. Internal to schema/.
//
// A link points at its parent and at the text it was given, so it must not
// outlive them. `parent.field("name")[i]` is one link (the index is copied
// into the field's link) and may be kept in a local while `parent` lives;
// `FieldPath("tiles")[t]` is a root and may be kept too. A longer chain of
// temporaries (`a.field("b").field("c")`) is only for a call's arguments,
// whose temporaries last until the call returns.

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace tessera::schema {

class FieldPath {
 public:
  // A root: a whole path written out, or a top-level field ("tiles").
  // Implicit, so that a function taking a FieldPath takes text as well.
  FieldPath(const char* text) noexcept : text_(text) {}
  FieldPath(std::string_view text) noexcept : text_(text) {}
  FieldPath(const std::string& text) noexcept : text_(text) {}

  // `path.name`
  FieldPath field(std::string_view name) const noexcept { return FieldPath(this, name, kNoIndex); }
  // `path[index]`: the same link with its index when it has none yet.
  FieldPath operator[](std::size_t index) const noexcept {
    return index_ == kNoIndex ? FieldPath(parent_, text_, index) : FieldPath(this, {}, index);
  }

  // The path in words, as the error names it.
  std::string str() const {
    std::string text;
    append_to(text);
    return text;
  }

 private:
  static constexpr std::size_t kNoIndex = std::numeric_limits<std::size_t>::max();
  FieldPath(const FieldPath* parent, std::string_view text, std::size_t index) noexcept
      : parent_(parent), text_(text), index_(index) {}
  void append_to(std::string& text) const {
    if (parent_ != nullptr) parent_->append_to(text);
    if (!text_.empty()) {
      if (parent_ != nullptr) text += '.';
      text += text_;
    }
    if (index_ != kNoIndex) {
      text += '[';
      text += std::to_string(index_);
      text += ']';
    }
  }

  const FieldPath* parent_ = nullptr;
  std::string_view text_;
  std::size_t index_ = kNoIndex;
};

}  // namespace tessera::schema
