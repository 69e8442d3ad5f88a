//! Plain-text tables for terminal output: left-aligned columns, two spaces apart.

/// Renders `rows` under `headers`, padding every column to its widest cell.
pub fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header_cells: Vec<String> = headers.iter().map(ToString::to_string).collect();
    for row in std::iter::once(&header_cells).chain(rows) {
        let mut line = String::new();
        for (index, (cell, width)) in row.iter().zip(&widths).enumerate() {
            if index + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_align_to_the_widest_cell() {
        let text = super::render(
            &["NAME", "VERSION"],
            &[
                vec!["s3".into(), "1.0.0".into()],
                vec!["example-echo".into(), "2".into()],
            ],
        );
        assert_eq!(
            text,
            "NAME          VERSION\ns3            1.0.0\nexample-echo  2\n"
        );
    }
}
