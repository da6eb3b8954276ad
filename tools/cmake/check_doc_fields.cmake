# cmake -DROOT=<source dir> -P check_doc_fields.cmake
# Fails unless docs/hkt.md documents every field of the layer and classifier
# configs with the default the headers give it (run by CTest as
# docs_config_fields_in_sync):
#   AttentionConfig, HKTConfig (models/include/hkt/models/attention.hpp):
#     a row "| `name` | default |" of the options table;
#   ClassifierConfig (models/include/hkt/models/classifier.hpp):
#     "`name default`" in the Configuration paragraph.
# A default is compared as written in the header, with DType::Float32 read as
# float32 and nullptr as null.
file(READ ${ROOT}/docs/hkt.md md)
set(failures "")

# fields(OUT HEADER STRUCT): "name=default;..." of the struct's data members.
function(fields out header struct)
  file(READ ${header} text)
  string(REGEX MATCH "struct ${struct}[^{]*{([^}]*)}" found "${text}")
  if(NOT found)
    message(FATAL_ERROR "${header}: no struct ${struct}")
  endif()
  # Declarations "  type name = default;", matched without the ';' (a list separator).
  string(REGEX MATCHALL "\n +[A-Za-z0-9_:<>]+\\*? +[a-z_]+ = [^;\n]+" decls "${CMAKE_MATCH_1}")
  set(result "")
  foreach(line IN LISTS decls)
    if(line MATCHES "^\n +[A-Za-z0-9_:<>]+\\*? +([a-z_]+) = (.+)$")
      set(name "${CMAKE_MATCH_1}")
      set(value "${CMAKE_MATCH_2}")
      string(REGEX REPLACE "^DType::Float" "float" value "${value}")
      string(REPLACE "nullptr" "null" value "${value}")
      list(APPEND result "${name}=${value}")
    endif()
  endforeach()
  if(NOT result)
    message(FATAL_ERROR "${header}: no fields found in struct ${struct}")
  endif()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# check(FIELDS BEFORE BETWEEN AFTER WHERE): each field must appear in hkt.md
# as BEFORE name BETWEEN default AFTER.
macro(check list before between after where)
  foreach(f IN LISTS ${list})
    string(REGEX MATCH "^([^=]+)=(.*)$" _ "${f}")
    set(want "${before}${CMAKE_MATCH_1}${between}${CMAKE_MATCH_2}${after}")
    string(FIND "${md}" "${want}" at)
    if(at EQUAL -1)
      string(APPEND failures "\n  ${where}: no \"${want}\"")
    endif()
  endforeach()
endmacro()

set(h ${ROOT}/models/include/hkt/models)
fields(attn ${h}/attention.hpp AttentionConfig)
fields(hkt ${h}/attention.hpp HKTConfig)
fields(cls ${h}/classifier.hpp ClassifierConfig)
check(attn "| `" "` | " " |" "AttentionConfig (options table)")
check(hkt "| `" "` | " " |" "HKTConfig (options table)")
check(cls "`" " " "`" "ClassifierConfig (Configuration)")
if(failures)
  message(FATAL_ERROR "docs/hkt.md is out of date with the config headers:${failures}")
endif()
list(LENGTH attn na)
list(LENGTH hkt nh)
list(LENGTH cls nc)
message(STATUS "docs/hkt.md documents the ${na} + ${nh} layer options and ${nc} classifier fields with their defaults")
