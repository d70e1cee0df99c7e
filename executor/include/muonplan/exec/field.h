#pragma once
// The arrays of a LocalParam (rank_state.h), for copies that do not care where they live; the
// checkpoint's fields name theirs (checkpoint_entries.h).

namespace muonplan::exec {

enum class Field { param, grad, momentum, variance };

}  // namespace muonplan::exec
