# Heredocs and multi-line templates, which a corpus line cannot hold: each local is one corpus
# expression, `local.NAME`. OpenTofu's console evaluates it with this file as its
# configuration; the short tier evaluates the local's expression.
locals {
  plain = <<EOT
  kept
    as is
EOT

  flush = <<-EOT
    one
      two
    three
    EOT

  flush_blank_lines = <<-EOT
    one

        
    two
    EOT

  flush_whitespace_only_short = <<-EOT
      one
  
      two
    EOT

  for_strip_after = <<-EOT
    %{ for x in ["a", "b"] ~}
      item ${x}
    %{ endfor ~}
    done
    EOT

  if_strip_both = <<-EOT
      indented
    %{ if true ~}
    yes
    %{~ endif }
    EOT

  if_else_strips = <<-EOT
    start
    %{~ if false ~}
      no
    %{~ else ~}
      yes
    %{~ endif ~}
    end
    EOT

  directive_at_line_start = <<-EOT
    a
%{ if true }
    b
%{ endif }
    c
    EOT

  nested_body_indent = <<-EOT
    a
    %{ if true }
    x
    %{ endif }
    EOT

  for_lines = <<-EOT
    %{~ for k, v in { b = 2, a = 1 } }
    ${k} = ${v}
    %{~ endfor }
    EOT

  interpolation_at_start = <<-EOT
    ${"x"}
      y
    EOT

  interpolated_whitespace = <<-EOT
      ${"   padded"}
    z
    EOT

  strip_interpolation = <<-EOT
    a   ${~ "b" ~}   c
    d
    EOT

  tabs = <<-EOT
		tab
		  tab and spaces
	EOT

  unicode_spaces = <<-EOT
    é
    ü
    EOT

  plain_strips = <<EOT
  %{ if true ~}
  yes
  %{~ endif ~}
  after
EOT

  yaml = <<-EOT
    name: app
    items:
    %{ for i in [1, 2] ~}
      - ${i}
    %{ endfor ~}
    done: true
    EOT

  decoded = yamldecode(<<-EOT
    a: yes
    list:
      - 1
      - two
    EOT
  )

  json = jsonencode({
    b = 1
    a = [for s in ["y", "x"] : upper(s)]
  })

  multiline_for = [
    for k, v in { z = 1, a = 2 } :
    "${k}${v}"
  ]

  template_string_lines = templatestring("x\n  %%{~ if true ~}\n  b\n  %%{~ endif ~}\n  c", {})

  template_string_quoted = "x\n  %{~ if true ~}\n  b\n  %{~ endif ~}\n  c"

  cloud_init = <<-EOT
    #cloud-config
    packages:
    %{ for p in ["nvidia-driver", "cuda"] ~}
      - ${p}
    %{ endfor ~}
    runcmd:
    %{ if true ~}
      - systemctl enable nvidia-persistenced
    %{ endif ~}
      - echo done
    EOT

  nginx = <<-EOT
    upstream app {
    %{ for i, host in ["a", "b"] ~}
        server ${host}:80 weight=${i + 1};
    %{ endfor ~}
    }
    %{~ if false }
    never
    %{~ endif }
    EOT

  nested_for = <<-EOT
    %{ for k, v in { b = [1, 2], a = [3] } ~}
    ${k}:
    %{ for x in v ~}
      - ${x}
    %{ endfor ~}
    %{ endfor ~}
    EOT

  interpolated_newlines = <<-EOT
    first
      ${"a\n  b"}
    last
    EOT

  indent_function = indent(2, <<-EOT
    a
      b
    EOT
  )

  trimmed_heredoc = trimspace(<<-EOT

      text

    EOT
  )

  close_marker_outdented = <<-EOT
        deep
      less
  EOT

  plain_for_column_zero = <<EOT
%{ for x in [1, 2] ~}
${x}
%{ endfor ~}
end
EOT

  interpolation_strips_lines = <<-EOT
    a
    ${~ "b" ~}
    c
    EOT

  else_branches = <<-EOT
    %{ if length([]) > 0 ~}
    some
    %{ else ~}
    none
    %{ endif ~}
    EOT

  template_in_heredoc = templatestring(<<-EOT
    %%{ for x in xs ~}
    - $${x}
    %%{ endfor ~}
    EOT
  , { xs = ["p", "q"] })

  json_in_heredoc = jsondecode(<<-EOT
    {
      "b": [1, 2.5, 12345678901234567890],
      "a": {"z": null, "y": "é"}
    }
    EOT
  )

  yaml_anchors = yamldecode(<<-EOT
    base: &base
      replicas: 2
      on: yes
    app:
      <<: *base
      replicas: 3
    EOT
  )

  join_lines = join(",", split("\n", trimspace(<<-EOT
    one
    two
    EOT
  )))

  strip_in_quoted_for = "[%{ for i, x in ["a", "b"] ~} ${i}=${x} %{~ endfor ~}]"

  directive_only_lines = <<-EOT
    %{~ if true ~}
    %{~ endif ~}
    x
    EOT

  unicode_indent = <<-EOT
    Grüße
      ${"ß"}
    EOT

  directive_column_zero_strips = <<-EOT
    a
%{~ if true }
    b
%{~ endif }
    EOT

  interpolation_column_zero = <<-EOT
    a
${"b"}
    c
    EOT

  plain_directive_column_zero_strips = <<EOT
    a
%{~ if true }
    b
%{~ endif }
EOT
}
