//! Results shaped for older revisions: content a revision does not know is
//! replaced by a text block that says what was there, so an older client
//! still gets a valid message and a hint of what it missed.

use mcp_schema::{ContentBlock, ProtocolVersion};

/// Makes `block` something `revision` can carry.
pub(crate) fn downgrade(block: ContentBlock, revision: ProtocolVersion) -> ContentBlock {
    match block {
        ContentBlock::Audio(audio) if !revision.has_audio() => ContentBlock::text(format!(
            "[audio content ({}) omitted: not supported by protocol {revision}]",
            audio.mime_type
        )),
        ContentBlock::ResourceLink(link) if !revision.has_resource_links() => {
            let name = link.title.as_deref().unwrap_or(&link.name);
            ContentBlock::text(format!("[resource link: {name} <{}>]", link.uri))
        }
        other => other,
    }
}

/// Makes every block of `blocks` something `revision` can carry.
pub(crate) fn downgrade_all(blocks: &mut Vec<ContentBlock>, revision: ProtocolVersion) {
    if revision.has_audio() && revision.has_resource_links() {
        return;
    }
    *blocks = std::mem::take(blocks)
        .into_iter()
        .map(|b| downgrade(b, revision))
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_schema::Resource;

    #[test]
    fn unknown_content_becomes_text_in_older_revisions() {
        let mut blocks = vec![
            ContentBlock::audio("AAAA", "audio/wav"),
            ContentBlock::resource_link(Resource::new("file:///a.txt", "a.txt")),
            ContentBlock::text("kept"),
        ];
        let mut old = blocks.clone();
        downgrade_all(&mut old, ProtocolVersion::V2024_11_05);
        assert!(old.iter().all(|b| b.as_text().is_some()), "{old:?}");
        assert!(old[0].as_text().unwrap().contains("audio/wav"));
        assert!(old[1].as_text().unwrap().contains("file:///a.txt"));
        let mut middle = blocks.clone();
        downgrade_all(&mut middle, ProtocolVersion::V2025_03_26);
        assert!(matches!(middle[0], ContentBlock::Audio(_)));
        assert!(middle[1].as_text().is_some());
        let original = blocks.clone();
        downgrade_all(&mut blocks, ProtocolVersion::V2025_06_18);
        assert_eq!(blocks, original);
    }
}
