#pragma once
// How a backend family lists its mutations once: a table of (enum value, name, description) that
// gives both the backend's own name ("mutant:<name>") and the family's Mutant records.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "moe/spec/mutant.hpp"

namespace moe::backends {

template <class Id>
struct MutationEntry {
    Id id;
    const char* name;
    const char* description;
};

// The entry of `id` in `table`, or nullptr (the family's "none").
template <class Id, std::size_t N>
const MutationEntry<Id>* find_mutation(const MutationEntry<Id> (&table)[N], Id id) {
    for (const auto& e : table)
        if (e.id == id) return &e;
    return nullptr;
}

// The backend name of a family member: "mutant:<name>" when `id` is in the table, else `plain`.
template <class Id, std::size_t N>
std::string mutant_or_plain_name(const MutationEntry<Id> (&table)[N], Id id, const std::string& plain) {
    const auto* e = find_mutation(table, id);
    return e ? std::string("mutant:") + e->name : plain;
}

// One Mutant per table entry; make(id) builds the broken backend.
template <class Id, std::size_t N>
std::vector<Mutant> mutants_from_table(const MutationEntry<Id> (&table)[N], const std::string& family,
                                       std::function<std::unique_ptr<Backend>(Id)> make) {
    std::vector<Mutant> list;
    for (const auto& e : table) {
        const Id id = e.id;
        list.push_back({e.name, family, e.description, [make, id] { return make(id); }});
    }
    return list;
}

}  // namespace moe::backends
