#pragma once
// RAII for HDF5 identifiers, and the two ways a call's result is checked (own / check): a
// failure throws FileError with HDF5's reason appended.
#include <hdf5.h>

#include <string>
#include <utility>

#include "hdf5/h5_error.hpp"

namespace moe::golden::h5 {

// Owns one HDF5 identifier and closes it with the matching H5?close.
class H5Id {
public:
    using Closer = herr_t (*)(hid_t);
    H5Id() = default;
    H5Id(hid_t id, Closer close) : id_(id), close_(close) {}
    H5Id(H5Id&& o) noexcept : id_(std::exchange(o.id_, -1)), close_(o.close_) {}
    H5Id& operator=(H5Id&& o) noexcept {
        if (this != &o) {
            reset();
            id_ = std::exchange(o.id_, -1);
            close_ = o.close_;
        }
        return *this;
    }
    H5Id(const H5Id&) = delete;
    H5Id& operator=(const H5Id&) = delete;
    ~H5Id() { reset(); }

    hid_t get() const { return id_; }
    bool valid() const { return id_ >= 0; }
    // Closes now and reports whether closing succeeded (closing a file flushes it).
    bool close() {
        const bool ok = id_ < 0 || close_(id_) >= 0;
        id_ = -1;
        return ok;
    }

private:
    void reset() {
        if (id_ >= 0 && close_) close_(id_);
        id_ = -1;
    }
    hid_t id_ = -1;
    Closer close_ = nullptr;
};

// Wraps a freshly returned id, throwing (with HDF5's reason) when the call failed.
H5Id own(hid_t id, H5Id::Closer close, const FileContext& ctx, Kind kind, const std::string& where,
         const std::string& what);

// Throws (with HDF5's reason) when a status is negative.
void check(herr_t status, const FileContext& ctx, Kind kind, const std::string& where, const std::string& what);

// A link of the given name exists in `loc` (false for a dangling or failed lookup).
bool link_exists(hid_t loc, const std::string& name);

}  // namespace moe::golden::h5
