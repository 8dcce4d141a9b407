-- title: Plugin markup left in chunks
-- description: Chunks whose text still holds Obsidian plugin markup (Meta Bind INPUT[…]/VIEW[…], Dataview `=this.`, query blocks or query lines (`FROM outgoing([[]])`, `econtains(`, `link(file.link`), Templater <% %>, comments %% %%, HTML spans) after the build cleaned it (markdown.readable). What is listed here reaches the embeddings and the LLM as noise: report the snippet as a bug.
-- level: warning
select chunks.concept_id as concept, chunks.seq, chunks.heading, substr(chunks.text, 1, 200) as text from chunks
where :folder in ('', okf_folder(chunks.concept_id))
  and (instr(chunks.text, 'INPUT[') or instr(chunks.text, 'VIEW[') or instr(chunks.text, 'BUTTON[')
   or instr(chunks.text, '<span') or instr(chunks.text, '=this.') or instr(lower(chunks.text), 'dataview')
   or instr(chunks.text, '<%') or instr(chunks.text, '%%')
   or instr(chunks.text, 'outgoing([[') or instr(chunks.text, 'incoming([[') or instr(chunks.text, 'econtains(')
   or instr(chunks.text, 'link(file.link')
   or instr(coalesce(chunks.heading, ''), 'VIEW[') or instr(coalesce(chunks.heading, ''), '=this.'))
order by chunks.concept_id, chunks.seq
